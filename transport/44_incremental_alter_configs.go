package transport

import (
	"context"
	"fmt"
	"strings"

	"github.com/foliolog/folio/topic"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// IncrementalAlterConfigs v0..v1: SET and DELETE (back to the default) of
// topic configs in Kafka's names and units, applied live to the open
// partitions by the Backend; APPEND and SUBTRACT of the one list config
// Folio acts on, cleanup.policy (APPEND compact to delete gives
// compact,delete; SUBTRACT of every entry is INVALID_CONFIG, as an empty
// policy means nothing here), and INVALID_CONFIG for any other key. Each
// resource is altered on its own, with its own error code.
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
				case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
					if err := alterCleanupList(cfg, c.Op, c.Name, c.Value); err != nil {
						return err
					}
				default:
					return fmt.Errorf("%w: unknown operation %s of %q", topic.ErrInvalidConfig, c.Op, c.Name)
				}
			}
			return nil
		}
		rr.ErrorCode, rr.ErrorMessage = alterResource(rc, r.ResourceType, r.ResourceName, seen[[2]any{r.ResourceType, r.ResourceName}], req.ValidateOnly, change)
		resp.Resources = append(resp.Resources, rr)
	}
	return kmsgResp{resp}, nil
}

// alterCleanupList applies an APPEND or SUBTRACT of cleanup.policy's
// entries (a comma-separated list, Kafka's form) to cfg.
func alterCleanupList(cfg *topic.Config, op kmsg.IncrementalAlterConfigOp, name string, value *string) error {
	if name != topic.KeyCleanup {
		return fmt.Errorf("%w: %s of %q: only cleanup.policy is a list", topic.ErrInvalidConfig, op, name)
	}
	if value == nil {
		return fmt.Errorf("%w: %s %q with a null value", kerr.InvalidRequest, op, name)
	}
	has := map[string]bool{}
	for _, e := range strings.Split(cfg.WithDefaults().Cleanup.String(), ",") {
		has[e] = true
	}
	for _, e := range strings.Split(*value, ",") {
		e = strings.TrimSpace(e)
		if e != "delete" && e != "compact" {
			return fmt.Errorf("%w: %s %q: %q is not a cleanup policy (delete, compact)", topic.ErrInvalidConfig, op, name, e)
		}
		has[e] = op == kmsg.IncrementalAlterConfigOpAppend
	}
	var list []string
	for _, e := range []string{"compact", "delete"} {
		if has[e] {
			list = append(list, e)
		}
	}
	if len(list) == 0 {
		return fmt.Errorf("%w: %s %q leaves no cleanup policy", topic.ErrInvalidConfig, op, name)
	}
	return setKafkaConfig(cfg, name, strings.Join(list, ","))
}
