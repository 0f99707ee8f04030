package transport

import (
	"context"
	"fmt"

	"github.com/foliolog/folio/topic"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// IncrementalAlterConfigs v0..v1: SET and DELETE (back to the default) of
// topic configs in Kafka's names and units, applied to the open
// partitions by the Backend (what cannot change live is INVALID_CONFIG);
// APPEND and SUBTRACT, for Kafka's list configs, are INVALID_CONFIG (the
// one list config Folio acts on, cleanup.policy, cannot change live).
// Each resource is altered on its own, with its own error code.
func init() {
	register(kmsg.IncrementalAlterConfigs.Int16(), 0, 1, handleIncrementalAlterConfigs)
}

func handleIncrementalAlterConfigs(_ context.Context, rc *reqCtx, kreq kmsg.Request) (response, error) {
	req := kreq.(*kmsg.IncrementalAlterConfigsRequest)
	resp := kmsg.NewPtrIncrementalAlterConfigsResponse()
	resp.Version = req.Version
	seen := map[[2]any]int{}
	for _, r := range req.Resources {
		seen[[2]any{r.ResourceType, r.ResourceName}]++
	}
	for _, r := range req.Resources {
		rr := kmsg.NewIncrementalAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
		change := func(cfg *topic.Config) error {
			defaults := defaultKafkaValues()
			for _, c := range r.Configs {
				switch c.Op {
				case kmsg.IncrementalAlterConfigOpSet:
					if c.Value == nil {
						return fmt.Errorf("%w: SET %q with a null value", kerr.InvalidRequest, c.Name)
					}
					if err := setKafkaConfig(cfg, c.Name, *c.Value); err != nil {
						return err
					}
				case kmsg.IncrementalAlterConfigOpDelete:
					if err := resetKafkaConfig(cfg, c.Name, defaults); err != nil {
						return err
					}
				default:
					return fmt.Errorf("%w: %s of %q: Folio's topic configs are not lists that change live", topic.ErrInvalidConfig, c.Op, c.Name)
				}
			}
			return nil
		}
		rr.ErrorCode, rr.ErrorMessage = alterResource(rc, r.ResourceType, r.ResourceName, seen[[2]any{r.ResourceType, r.ResourceName}], req.ValidateOnly, change)
		resp.Resources = append(resp.Resources, rr)
	}
	return kmsgResp{resp}, nil
}
