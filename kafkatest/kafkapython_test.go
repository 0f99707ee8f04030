package kafkatest

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/foliolog/folio"
	"github.com/foliolog/folio/record"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const kafkaPythonInstall = "apt-get install python3-kafka python3-snappy python3-lz4 python3-zstandard"

// kafkaPythonScript is the kafka-python side: one mode per run (argv[1]),
// its input a JSON object on stdin, its output one JSON value on stdout.
// Bytes travel as hex, null as null.
const kafkaPythonScript = `
import json, sys
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic

mode, boot = sys.argv[1], sys.argv[2]
req = json.load(sys.stdin)
unhex = lambda s: None if s is None else bytes.fromhex(s)
tohex = lambda b: None if b is None else b.hex()

def consumer(**kw):
    return KafkaConsumer(bootstrap_servers=boot, auto_offset_reset="earliest", enable_auto_commit=False,
                         consumer_timeout_ms=20000, **kw)

def records(c, n):
    out = []
    for m in c:
        out.append({"partition": m.partition, "offset": m.offset, "timestamp": m.timestamp,
                    "key": tohex(m.key), "value": tohex(m.value),
                    "headers": [[k, tohex(v)] for k, v in (m.headers or [])]})
        if len(out) == n:
            break
    return out

if mode == "codecs":
    from kafka.codec import has_gzip, has_snappy, has_lz4, has_zstd
    print(json.dumps([c for c, ok in [("gzip", has_gzip()), ("snappy", has_snappy()), ("lz4", has_lz4()), ("zstd", has_zstd())] if ok]))
elif mode == "admin":
    a = KafkaAdminClient(bootstrap_servers=boot)
    r = a.create_topics([NewTopic(req["topic"], req["partitions"], 1)])
    errs = [e[1] for e in r.topic_errors]
    print(json.dumps({"errors": errs, "topics": sorted(a.list_topics())}))
    a.close()
elif mode == "produce":
    p = KafkaProducer(bootstrap_servers=boot, acks="all", compression_type=req["codec"], linger_ms=10)
    futs = [p.send(req["topic"], key=unhex(r["key"]), value=unhex(r["value"]),
                   headers=[(k, unhex(v)) for k, v in r["headers"]]) for r in req["records"]]
    p.flush()
    print(json.dumps([[f.get(timeout=30).partition, f.get(timeout=30).offset] for f in futs]))
    p.close()
elif mode == "consume":
    if req.get("group"):
        c = consumer(group_id=req["group"])
        c.subscribe([req["topic"]])
    else:
        c = consumer()
        c.assign([TopicPartition(req["topic"], p) for p in c.partitions_for_topic(req["topic"])])
        c.seek_to_beginning()
    out = records(c, req["n"])
    if req.get("group"):
        c.commit()
    c.close()
    print(json.dumps(out))
elif mode == "offsets":
    c = consumer()
    tps = [TopicPartition(req["topic"], p) for p in sorted(c.partitions_for_topic(req["topic"]))]
    ends, starts = c.end_offsets(tps), c.beginning_offsets(tps)
    times = c.offsets_for_times({tp: req["time"] for tp in tps})
    print(json.dumps([{"partition": tp.partition, "start": starts[tp], "end": ends[tp],
                       "at_time": None if times[tp] is None else times[tp].offset} for tp in tps]))
    c.close()
`

// kafkaPython finds a python3 that imports kafka-python (Debian's
// python3-kafka installs for /usr/bin/python3, which a pyenv python3 on
// PATH does not see), writes the script into the test's directory and
// returns a function that runs one of its modes.
func kafkaPython(t *testing.T) func(mode, boot string, in any, out any) {
	t.Helper()
	py := pythonWithKafka(t)
	script := filepath.Join(t.TempDir(), "folio_kafka_python.py")
	if err := os.WriteFile(script, []byte(kafkaPythonScript), 0o644); err != nil {
		t.Fatal(err)
	}
	return func(mode, boot string, in any, out any) {
		t.Helper()
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		stdout := runTool(t, b, nil, py, script, mode, boot)
		if err := json.Unmarshal(stdout, out); err != nil {
			t.Fatalf("kafka-python %s: %v\n%s", mode, err, stdout)
		}
	}
}

// pythonWithKafka returns a python3 that imports kafka-python, or skips
// the test naming the install command.
func pythonWithKafka(t *testing.T) string {
	t.Helper()
	for _, cand := range []string{"/usr/bin/python3", "python3"} {
		p, err := exec.LookPath(cand)
		if err == nil && exec.Command(p, "-c", "import kafka").Run() == nil {
			return p
		}
	}
	t.Skipf("kafka-python is not installed for any python3; install it with: %s", kafkaPythonInstall)
	return ""
}

// wireRecord is a record as the client scripts exchange them.
type wireRecord struct {
	Partition int32       `json:"partition"`
	Offset    int64       `json:"offset"`
	Timestamp int64       `json:"timestamp"`
	Key       *string     `json:"key"`
	Value     *string     `json:"value"`
	Headers   [][2]string `json:"headers"`
}

func hexOrNil(b []byte) *string {
	if b == nil {
		return nil
	}
	s := hex.EncodeToString(b)
	return &s
}

func unhexOrNil(t *testing.T, s *string) []byte {
	t.Helper()
	if s == nil {
		return nil
	}
	b, err := hex.DecodeString(*s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func toWire(r folio.Record) wireRecord {
	w := wireRecord{Partition: r.Partition, Offset: r.Offset, Key: hexOrNil(r.Key), Value: hexOrNil(r.Value), Headers: [][2]string{}}
	for _, h := range r.Headers {
		w.Headers = append(w.Headers, [2]string{h.Key, hex.EncodeToString(h.Value)})
	}
	return w
}

func fromWire(t *testing.T, topicName string, ws []wireRecord) []folio.Record {
	t.Helper()
	var out []folio.Record
	for _, w := range ws {
		r := folio.Record{Topic: topicName, Partition: w.Partition, Offset: w.Offset, Key: unhexOrNil(t, w.Key), Value: unhexOrNil(t, w.Value), Timestamp: time.UnixMilli(w.Timestamp)}
		for _, h := range w.Headers {
			v := h[1]
			r.Headers = append(r.Headers, folio.Header{Key: h[0], Value: unhexOrNil(t, &v)})
		}
		out = append(out, r)
	}
	sortRecords(out)
	return out
}

// testRecords returns n records with random binary keys and compressible
// values, a null key, a null value, an empty value and headers among them.
func testRecords(t *testing.T, topicName string, n int) []folio.Record {
	r := testRand(t)
	var recs []folio.Record
	for i := range n {
		rec := folio.Record{Topic: topicName, Key: append(fmt.Appendf(nil, "%04d", i), randomBytes(r, r.IntN(12))...),
			Value:   slices.Repeat(randomBytes(r, 1+r.IntN(40)), 1+r.IntN(10)),
			Headers: []folio.Header{{Key: "i", Value: fmt.Appendf(nil, "%d", i)}, {Key: "bin", Value: randomBytes(r, r.IntN(8))}}}
		switch i % 40 {
		case 1:
			rec.Key = nil
		case 2:
			rec.Value = nil
		case 3:
			rec.Value = []byte{}
		case 4:
			rec.Headers = nil
		}
		recs = append(recs, rec)
	}
	return recs
}

// TestKafkaPythonProduceEveryCodec produces with acks=all in every codec
// kafka-python has here, and reads the records byte for byte with the
// in-process Consumer, from batches stored in that codec.
func TestKafkaPythonProduceEveryCodec(t *testing.T) {
	py := kafkaPython(t)
	c, sl := newLogged(t, &Options{Partitions: 3})
	var codecs []string
	py("codecs", c.Addr(), struct{}{}, &codecs)
	if len(codecs) < 4 {
		t.Logf("kafka-python has only the codecs %v here; %s brings the others", codecs, kafkaPythonInstall)
	}
	want := map[string]record.Codec{"none": record.CodecNone, "gzip": record.CodecGzip, "snappy": record.CodecSnappy, "lz4": record.CodecLZ4, "zstd": record.CodecZstd}
	for _, name := range append([]string{"none"}, codecs...) {
		t.Run(name, func(t *testing.T) {
			topicName := "py-" + name
			recs := testRecords(t, topicName, 200)
			in := struct {
				Topic   string       `json:"topic"`
				Codec   *string      `json:"codec"`
				Records []wireRecord `json:"records"`
			}{Topic: topicName}
			if name != "none" {
				in.Codec = &name
			}
			for _, r := range recs {
				in.Records = append(in.Records, toWire(r))
			}
			var acked [][2]int64
			py("produce", c.Addr(), in, &acked)
			for i := range recs {
				recs[i].Partition, recs[i].Offset = int32(acked[i][0]), acked[i][1]
			}
			sortRecords(recs)
			sameRecords(t, readAll(t, c.Broker, topicName), recs)
			for _, b := range storedBatches(t, c.Broker, topicName) {
				if b.Codec() != want[name] {
					t.Fatalf("a batch at %d is stored in %v, want %s", b.BaseOffset(), b.Codec(), name)
				}
			}
		})
	}
	if !sl.used(kmsg.Produce) {
		t.Error("no Produce request seen")
	}
}

// TestKafkaPythonConsumeGroupAndOffsets reads what the in-process Producer
// wrote, from the beginning without a group, then with a group that
// commits; a second run of the group reads only what came after. It also
// lists offsets (earliest, latest, by time) and creates a topic with the
// admin client.
func TestKafkaPythonConsumeGroupAndOffsets(t *testing.T) {
	py := kafkaPython(t)
	c, sl := newLogged(t, &Options{Partitions: 3, Topics: []string{"in"}})
	recs := testRecords(t, "in", 150)
	base := time.UnixMilli(1_700_000_000_000)
	for i := range recs {
		recs[i].Timestamp = base.Add(time.Duration(i) * time.Second)
	}
	first := produceAll(t, c.Broker, recs[:100])
	type consumeIn struct {
		Topic string `json:"topic"`
		Group string `json:"group,omitempty"`
		N     int    `json:"n"`
	}
	var got []wireRecord
	py("consume", c.Addr(), consumeIn{Topic: "in", N: len(first)}, &got)
	gotRecs := fromWire(t, "in", got)
	sameRecords(t, gotRecs, first)
	for i := range gotRecs {
		if !gotRecs[i].Timestamp.Equal(first[i].Timestamp) {
			t.Fatalf("record at %d/%d: timestamp %v, want %v", first[i].Partition, first[i].Offset, gotRecs[i].Timestamp, first[i].Timestamp)
		}
	}

	got = nil
	py("consume", c.Addr(), consumeIn{Topic: "in", Group: "py-group", N: len(first)}, &got)
	sameRecords(t, fromWire(t, "in", got), first)
	hw := highWatermarks(t, c.Broker, "in")
	if cm := committed(t, c.Broker, "py-group", "in"); fmt.Sprint(cm) != fmt.Sprint(hw) {
		t.Fatalf("committed %v, want the high watermarks %v", cm, hw)
	}
	second := produceAll(t, c.Broker, recs[100:])
	got = nil
	py("consume", c.Addr(), consumeIn{Topic: "in", Group: "py-group", N: len(second)}, &got)
	sameRecords(t, fromWire(t, "in", got), second)

	// Offsets: the first record at or after record 120's time is record
	// 120, in whichever partition it went to.
	var offs []struct {
		Partition int32  `json:"partition"`
		Start     int64  `json:"start"`
		End       int64  `json:"end"`
		AtTime    *int64 `json:"at_time"`
	}
	at := recs[120].Timestamp
	py("offsets", c.Addr(), map[string]any{"topic": "in", "time": at.UnixMilli()}, &offs)
	info, err := c.Broker.DescribeTopic("in")
	if err != nil {
		t.Fatal(err)
	}
	all := append(slices.Clone(first), second...)
	for _, o := range offs {
		pi := info.Partitions[o.Partition]
		if o.Start != pi.LogStartOffset || o.End != pi.HighWatermark {
			t.Fatalf("partition %d: offsets %d..%d, want %d..%d", o.Partition, o.Start, o.End, pi.LogStartOffset, pi.HighWatermark)
		}
		want := int64(-1)
		for _, r := range all {
			if r.Partition == o.Partition && !r.Timestamp.Before(at) && (want < 0 || r.Offset < want) {
				want = r.Offset
			}
		}
		if (o.AtTime == nil) != (want < 0) || (o.AtTime != nil && *o.AtTime != want) {
			t.Fatalf("partition %d: offset for time %v is %v, want %d", o.Partition, at, o.AtTime, want)
		}
	}

	var adm struct {
		Errors []int16  `json:"errors"`
		Topics []string `json:"topics"`
	}
	py("admin", c.Addr(), map[string]any{"topic": "py-admin", "partitions": 5}, &adm)
	if len(adm.Errors) != 1 || adm.Errors[0] != 0 || !slices.Contains(adm.Topics, "py-admin") {
		t.Fatalf("create topic: %+v", adm)
	}
	if in, err := c.Broker.DescribeTopic("py-admin"); err != nil || len(in.Partitions) != 5 {
		t.Fatalf("the created topic: %v partitions, %v", len(in.Partitions), err)
	}
	for _, k := range []kmsg.Key{kmsg.JoinGroup, kmsg.SyncGroup, kmsg.OffsetCommit, kmsg.OffsetFetch, kmsg.ListOffsets, kmsg.CreateTopics} {
		if !sl.used(k) {
			t.Errorf("kafka-python never sent %s", kmsg.NameForKey(k.Int16()))
		}
	}
}
