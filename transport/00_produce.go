package transport

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/topic"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Produce v3..v13 (RecordBatch v2 only, as Kafka 4; v13 names topics by
// id), advertised from v0 as Kafka 4 does, for librdkafka's compression
// check (advertiseFrom); a request below v3 closes its connection. Each partition's batches go through partition.AppendBatch, which
// applies the topic's rules (max.message.bytes, compression, timestamp
// type, idempotence) and returns once the append is acknowledged under
// the topic's flush policy: acks 1 and -1 (all) are the same until
// replication exists; acks 0 gets no response. The partitions of one
// request are appended concurrently, so their fsyncs overlap. A
// transactional produce is refused (transactions are not served).
func init() {
	register(kmsg.Produce.Int16(), 3, 13, handleProduce)
	advertiseFrom(kmsg.Produce.Int16(), 0)
}

func handleProduce(ctx context.Context, rc *reqCtx, kreq kmsg.Request) (response, error) {
	req := kreq.(*kmsg.ProduceRequest)
	if req.TimeoutMillis > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(req.TimeoutMillis)*time.Millisecond)
		defer cancel()
	}
	resp := kmsg.NewPtrProduceResponse()
	resp.Version = req.Version
	var wg sync.WaitGroup
	for _, t := range req.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		name, terr := t.Topic, error(nil)
		if req.Version >= 13 {
			var in topic.Info
			if in, terr = rc.s.b.TopicInfoByID(topic.ID(t.TopicID)); terr == nil {
				name = in.Name
			} else if errors.Is(terr, topic.ErrNotFound) {
				terr = kerr.UnknownTopicID
			}
		}
		rt.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(t.Partitions))
		for i, p := range t.Partitions {
			rp := &rt.Partitions[i]
			*rp = kmsg.NewProduceResponseTopicPartition()
			rp.Partition = p.Partition
			rp.BaseOffset, rp.LogAppendTime, rp.LogStartOffset = -1, -1, -1
			switch {
			case req.TransactionID != nil:
				setProduceErr(rp, kerr.TransactionalIDAuthorizationFailed, "transport: transactions are not served")
				continue
			case terr != nil:
				setProduceErr(rp, terr, "")
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				rc.s.producePartition(ctx, name, p.Partition, p.Records, rp)
			}()
		}
		resp.Topics = append(resp.Topics, rt)
	}
	wg.Wait()
	if req.Acks == 0 {
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 {
					rc.c.log.Debug("transport: acks=0 produce failed", "topic", t.Topic, "partition", p.Partition, "code", p.ErrorCode)
				}
			}
		}
		return nil, nil
	}
	return kmsgResp{resp}, nil
}

func setProduceErr(rp *kmsg.ProduceResponseTopicPartition, err error, msg string) {
	rp.ErrorCode = partitionCode(err)
	if msg == "" {
		msg = err.Error()
	}
	rp.ErrorMessage = &msg
}

// producePartition appends the batches of one partition and fills its
// response: the first batch's base offset, the log append time and the
// log start offset after the append.
func (s *Server) producePartition(ctx context.Context, name string, index int32, records []byte, rp *kmsg.ProduceResponseTopicPartition) {
	p, err := s.b.Partition(name, index)
	if err != nil {
		setProduceErr(rp, err, "")
		return
	}
	if len(records) == 0 {
		setProduceErr(rp, kerr.InvalidRecord, "transport: produce with no records")
		return
	}
	first := true
	for len(records) > 0 {
		size, err := record.CheckHeader(records)
		if err != nil || size > len(records) {
			if err == nil {
				err = fmt.Errorf("batch of %d bytes in %d", size, len(records))
			}
			setProduceErr(rp, kerr.CorruptMessage, fmt.Sprintf("transport: %s-%d: %v", name, index, err))
			return
		}
		res, err := p.AppendBatch(ctx, records[:size:size])
		if err != nil {
			setProduceErr(rp, err, "")
			return
		}
		if first {
			rp.BaseOffset, rp.LogAppendTime = res.BaseOffset, res.LogAppendTime
			first = false
		}
		rp.LogStartOffset = res.LogStartOffset
		records = records[size:]
	}
}
