package transport

import (
	"context"
	"fmt"

	"github.com/foliolog/folio/topic"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AlterConfigs v0..v2: Kafka's whole-config replacement. The keys a
// resource names are set and every other key goes back to its default
// (as in Kafka, whose tools send the current values of the keys they keep
// after a DescribeConfigs); the open partitions apply the result live.
func init() { register(kmsg.AlterConfigs.Int16(), 0, 2, handleAlterConfigs) }

func handleAlterConfigs(_ context.Context, rc *reqCtx, kreq kmsg.Request) (response, error) {
	req := kreq.(*kmsg.AlterConfigsRequest)
	resp := kmsg.NewPtrAlterConfigsResponse()
	resp.Version = req.Version
	seen := map[[2]any]int{}
	for _, r := range req.Resources {
		seen[[2]any{r.ResourceType, r.ResourceName}]++
	}
	for _, r := range req.Resources {
		rr := kmsg.NewAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
		change := func(cfg *topic.Config) error {
			*cfg = topic.Config{Partitions: cfg.Partitions}.WithDefaults()
			for _, c := range r.Configs {
				if c.Value == nil {
					return fmt.Errorf("%w: %q with a null value", kerr.InvalidRequest, c.Name)
				}
				if err := setKafkaConfig(cfg, c.Name, *c.Value); err != nil {
					return err
				}
			}
			return nil
		}
		rr.ErrorCode, rr.ErrorMessage = alterResource(rc, r.ResourceType, r.ResourceName, seen[[2]any{r.ResourceType, r.ResourceName}], req.ValidateOnly, change)
		resp.Resources = append(resp.Resources, rr)
	}
	return kmsgResp{resp}, nil
}
