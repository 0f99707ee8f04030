package kafkatest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/foliolog/folio"
	"github.com/foliolog/folio/record"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kcat is librdkafka's command-line client: what it negotiates is what
// every librdkafka binding (confluent-kafka-python, -go, -dotnet,
// node-rdkafka) does.
const kcatInstall = "apt-get install kcat"

// kcatFormat prints a consumed record so that binary keys and values
// survive: a line of partition, offset, timestamp, key length, value
// length (-1 for null) and headers, then the key and value bytes and a
// newline.
const kcatFormat = `%p %o %T %K %S %h\n%k%s\n`

// parseKcat parses records printed in kcatFormat.
func parseKcat(t *testing.T, topicName string, out []byte) []folio.Record {
	t.Helper()
	br := bufio.NewReader(bytes.NewReader(out))
	var recs []folio.Record
	for {
		line, err := br.ReadString('\n')
		if err == io.EOF && line == "" {
			break
		}
		if err != nil {
			t.Fatalf("kcat output: %v after %d records", err, len(recs))
		}
		f := strings.SplitN(strings.TrimSuffix(line, "\n"), " ", 6)
		if len(f) != 6 {
			t.Fatalf("kcat output line %q", line)
		}
		var n [5]int64
		for i := range n {
			if n[i], err = strconv.ParseInt(f[i], 10, 64); err != nil {
				t.Fatalf("kcat output line %q: %v", line, err)
			}
		}
		r := folio.Record{Topic: topicName, Partition: int32(n[0]), Offset: n[1], Timestamp: time.UnixMilli(n[2])}
		read := func(size int64) []byte {
			if size < 0 {
				return nil
			}
			b := make([]byte, size)
			if _, err := io.ReadFull(br, b); err != nil {
				t.Fatalf("kcat output: record at %d/%d: %v", r.Partition, r.Offset, err)
			}
			return b
		}
		r.Key, r.Value = read(n[3]), read(n[4])
		if nl, err := br.ReadByte(); err != nil || nl != '\n' {
			t.Fatalf("kcat output: record at %d/%d does not end its line", r.Partition, r.Offset)
		}
		if f[5] != "" {
			for _, h := range strings.Split(f[5], ",") {
				k, v, _ := strings.Cut(h, "=")
				r.Headers = append(r.Headers, folio.Header{Key: k, Value: []byte(v)})
			}
		}
		recs = append(recs, r)
	}
	sortRecords(recs)
	return recs
}

// TestKcatProduceEveryCodec produces binary keys and values with headers
// through librdkafka in each codec it has, idempotent and with acks=all,
// and reads them back byte for byte with the in-process Consumer, from
// batches stored in that codec.
func TestKcatProduceEveryCodec(t *testing.T) {
	kcat := needTool(t, "kcat", kcatInstall)
	codecs := map[string]record.Codec{"none": record.CodecNone, "gzip": record.CodecGzip, "snappy": record.CodecSnappy, "lz4": record.CodecLZ4, "zstd": record.CodecZstd}
	var topics []string
	for name := range codecs {
		topics = append(topics, "kcat-"+name)
	}
	c, sl := newLogged(t, &Options{Partitions: 3, Topics: topics})
	r := testRand(t)
	for name, codec := range codecs {
		t.Run(name, func(t *testing.T) {
			topicName := "kcat-" + name
			// Records are separated by 0x1e and keys by 0x1f, which the
			// random bytes avoid; every key is distinct.
			const n = 300
			var in bytes.Buffer
			var want []folio.Record
			for i := range n {
				key := append(fmt.Appendf(nil, "%03d", i), randomBytes(r, r.IntN(16), 0x1e, 0x1f)...)
				// Compressible (a random run repeated), or librdkafka
				// sends the batch uncompressed.
				value := bytes.Repeat(randomBytes(r, 1+r.IntN(30), 0x1e, 0x1f), 1+r.IntN(20))
				in.Write(key)
				in.WriteByte(0x1f)
				in.Write(value)
				in.WriteByte(0x1e)
				want = append(want, folio.Record{Key: key, Value: value, Headers: []folio.Header{{Key: "codec", Value: []byte(name)}, {Key: "empty", Value: []byte{}}}})
			}
			runTool(t, in.Bytes(), nil, kcat, "-b", c.Addr(), "-P", "-t", topicName, "-z", name,
				"-K", `\x1f`, "-D", `\x1e`, "-H", "codec="+name, "-H", "empty=",
				"-X", "enable.idempotence=true", "-X", "acks=all", "-X", "linger.ms=20")
			got := readAll(t, c.Broker, topicName)
			if len(got) != n {
				t.Fatalf("%d records in process, want %d", len(got), n)
			}
			// librdkafka chooses the partitions (consistent_random: CRC32 of
			// the key).
			sameRecordsByKey(t, got, want)
			storedIdempotent(t, c.Broker, topicName, codec, "librdkafka")
		})
	}
	if !sl.used(kmsg.InitProducerID) {
		t.Error("librdkafka never asked for a producer id")
	}
}

// TestKcatConsume reads records the in-process Producer wrote (binary
// keys and values, a null key, a null value, an empty value, headers)
// with kcat -C from the beginning, byte for byte.
func TestKcatConsume(t *testing.T) {
	kcat := needTool(t, "kcat", kcatInstall)
	c, _ := newLogged(t, &Options{Partitions: 3, Topics: []string{"in"}})
	r := testRand(t)
	var recs []folio.Record
	for i := range 200 {
		rec := folio.Record{Topic: "in", Key: randomBytes(r, 1+r.IntN(20)), Value: randomBytes(r, r.IntN(3000)), Timestamp: time.UnixMilli(1_700_000_000_000 + int64(i)*1001)}
		switch i % 50 {
		case 1:
			rec.Key = nil
		case 2:
			rec.Value = nil
		case 3:
			rec.Value = []byte{}
		case 4:
			rec.Headers = []folio.Header{{Key: "a", Value: []byte("1")}, {Key: "b", Value: []byte("two")}}
		}
		recs = append(recs, rec)
	}
	want := produceAll(t, c.Broker, recs)
	out := runTool(t, nil, nil, kcat, "-b", c.Addr(), "-C", "-t", "in", "-o", "beginning", "-e", "-q", "-f", kcatFormat)
	got := parseKcat(t, "in", out)
	sameRecords(t, got, want)
	for i := range got {
		if !got[i].Timestamp.Equal(want[i].Timestamp) {
			t.Fatalf("record at %d/%d: timestamp %v, want %v", got[i].Partition, got[i].Offset, got[i].Timestamp, want[i].Timestamp)
		}
	}
}

// TestKcatMetadata lists the cluster with kcat -L: the one broker at the
// advertised address and every topic with its partitions led by it.
func TestKcatMetadata(t *testing.T) {
	kcat := needTool(t, "kcat", kcatInstall)
	c, _ := newLogged(t, &Options{Partitions: 4, Topics: []string{"a", "b"}})
	out := runTool(t, nil, nil, kcat, "-b", c.Addr(), "-L", "-J")
	var md struct {
		Brokers []struct {
			ID   int32  `json:"id"`
			Name string `json:"name"`
		} `json:"brokers"`
		Topics []struct {
			Topic      string `json:"topic"`
			Err        string `json:"error"`
			Partitions []struct {
				Partition int32 `json:"partition"`
				Leader    int32 `json:"leader"`
			} `json:"partitions"`
		} `json:"topics"`
	}
	if err := json.Unmarshal(out, &md); err != nil {
		t.Fatalf("kcat -L -J: %v\n%s", err, out)
	}
	if len(md.Brokers) != 1 || md.Brokers[0].Name != c.Addr() {
		t.Fatalf("brokers %+v, want the one at %s", md.Brokers, c.Addr())
	}
	found := map[string]int{}
	for _, tp := range md.Topics {
		if tp.Err != "" {
			t.Fatalf("topic %s: %s", tp.Topic, tp.Err)
		}
		for _, p := range tp.Partitions {
			if p.Leader != md.Brokers[0].ID {
				t.Fatalf("%s/%d led by %d", tp.Topic, p.Partition, p.Leader)
			}
		}
		found[tp.Topic] = len(tp.Partitions)
	}
	if found["a"] != 4 || found["b"] != 4 {
		t.Fatalf("topics %v, want a and b with 4 partitions", found)
	}
}

// TestKcatGroupCommitsAndResumes runs kcat's balanced consumer (-G) to
// the end of the topic, which commits on the way out; a second run of the
// same group reads only what was written after.
func TestKcatGroupCommitsAndResumes(t *testing.T) {
	kcat := needTool(t, "kcat", kcatInstall)
	c, sl := newLogged(t, &Options{Partitions: 3, Topics: []string{"g"}})
	r := testRand(t)
	batch := func(from, n int) []folio.Record {
		var recs []folio.Record
		for i := range n {
			recs = append(recs, folio.Record{Topic: "g", Key: fmt.Appendf(nil, "k%d", from+i), Value: randomBytes(r, r.IntN(100))})
		}
		return recs
	}
	group := func() []folio.Record {
		out := runTool(t, nil, nil, kcat, "-b", c.Addr(), "-G", "kcat-group", "-e", "-q", "-f", kcatFormat,
			"-X", "auto.offset.reset=earliest", "-X", "session.timeout.ms=6000", "g")
		return parseKcat(t, "g", out)
	}
	first := produceAll(t, c.Broker, batch(0, 60))
	sameRecords(t, group(), first)
	hw := highWatermarks(t, c.Broker, "g")
	if got := committed(t, c.Broker, "kcat-group", "g"); fmt.Sprint(got) != fmt.Sprint(hw) {
		t.Fatalf("committed %v, want the high watermarks %v", got, hw)
	}
	second := produceAll(t, c.Broker, batch(60, 30))
	sameRecords(t, group(), second)
	for _, k := range []kmsg.Key{kmsg.JoinGroup, kmsg.SyncGroup, kmsg.OffsetCommit, kmsg.OffsetFetch, kmsg.LeaveGroup} {
		if !sl.used(k) {
			t.Errorf("kcat's group never sent %s", kmsg.NameForKey(k.Int16()))
		}
	}
}
