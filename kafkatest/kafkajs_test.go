package kafkatest

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/foliolog/folio/record"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kafkajsDirEnv names the directory kafkajs was installed into with npm
// install --prefix DIR kafkajs@2; default $HOME/.cache/folio/kafkajs (what
// .ci/run uses).
const kafkajsDirEnv = "FOLIO_KAFKAJS_DIR"

const kafkajsInstall = "npm install --prefix ~/.cache/folio/kafkajs kafkajs@2 (or set " + kafkajsDirEnv + " to the --prefix used)"

// kafkajsScript is the kafkajs side: one mode per run (argv[2]), its input
// a JSON object on stdin, its output one JSON value on stdout. Bytes
// travel as hex, null as null.
const kafkajsScript = `
const { Kafka, logLevel, CompressionTypes } = require(process.env.FOLIO_KAFKAJS)
const [mode, boot] = process.argv.slice(2)
const kafka = new Kafka({ clientId: 'folio-kafkajs-test', brokers: [boot], logLevel: logLevel.ERROR, retry: { retries: 3 } })
const unhex = (s) => (s === null ? null : Buffer.from(s, 'hex'))
const tohex = (b) => (b === null || b === undefined ? null : b.toString('hex'))

async function readStdin() {
  const chunks = []
  for await (const c of process.stdin) chunks.push(c)
  return JSON.parse(Buffer.concat(chunks).toString())
}

async function main() {
  const req = await readStdin()
  if (mode === 'produce') {
    const p = kafka.producer({ idempotent: true, maxInFlightRequests: 1 })
    await p.connect()
    const messages = req.records.map((r) => ({ key: unhex(r.key), value: unhex(r.value),
      headers: Object.fromEntries(r.headers.map(([k, v]) => [k, unhex(v)])) }))
    const codec = req.codec === 'gzip' ? CompressionTypes.GZIP : CompressionTypes.None
    // Batches of 50: each send is one Produce request per partition.
    for (let i = 0; i < messages.length; i += 50) {
      await p.send({ topic: req.topic, acks: -1, compression: codec, messages: messages.slice(i, i + 50) })
    }
    await p.disconnect()
    return {}
  }
  if (mode === 'consume') {
    const c = kafka.consumer({ groupId: req.group, sessionTimeout: 10000, heartbeatInterval: 500 })
    await c.connect()
    await c.subscribe({ topic: req.topic, fromBeginning: true })
    const out = []
    await new Promise((resolve, reject) => {
      c.run({ autoCommit: false, eachMessage: async ({ partition, message }) => {
        out.push({ partition, offset: Number(message.offset), timestamp: Number(message.timestamp),
          key: tohex(message.key), value: tohex(message.value),
          headers: Object.entries(message.headers || {}).map(([k, v]) => [k, tohex(v)]) })
        if (out.length === req.n) resolve()
      } }).catch(reject)
    })
    const next = {}
    for (const r of out) next[r.partition] = Math.max(next[r.partition] || 0, r.offset + 1)
    await c.commitOffsets(Object.entries(next).map(([p, o]) => ({ topic: req.topic, partition: Number(p), offset: String(o) })))
    await c.disconnect()
    return out
  }
  if (mode === 'admin') {
    const a = kafka.admin()
    await a.connect()
    const created = await a.createTopics({ topics: [{ topic: req.create, numPartitions: 2 }], waitForLeaders: true })
    await a.createPartitions({ topicPartitions: [{ topic: req.create, count: 4 }] })
    const meta = await a.fetchTopicMetadata({ topics: [req.create] })
    const offsets = await a.fetchTopicOffsets(req.topic)
    const byTime = await a.fetchTopicOffsetsByTimestamp(req.topic, req.time)
    const committed = await a.fetchOffsets({ groupId: req.group, topics: [req.topic] })
    const groups = await a.describeGroups([req.group])
    const listed = await a.listGroups()
    const configs = await a.describeConfigs({ resources: [{ type: 2, name: req.topic, configNames: ['retention.ms', 'cleanup.policy'] }], includeSynonyms: false })
    await a.deleteTopics({ topics: [req.create] })
    const topics = await a.listTopics()
    const cluster = await a.describeCluster()
    await a.disconnect()
    return { created, partitions: meta.topics[0].partitions.length, offsets, byTime,
      committed: committed[0].partitions, groups: groups.groups.map((g) => [g.groupId, g.state]),
      listed: listed.groups.map((g) => g.groupId),
      configs: configs.resources[0].configEntries.map((e) => [e.configName, e.configValue]),
      topics, brokers: cluster.brokers.map((b) => b.host + ':' + b.port) }
  }
  if (mode === 'tls') {
    const k = new Kafka({ clientId: 'folio-kafkajs-test', brokers: [boot], logLevel: logLevel.ERROR, retry: { retries: 2 },
      ssl: { ca: [require('fs').readFileSync(req.ca, 'utf8')], servername: 'localhost' } })
    const p = k.producer()
    await p.connect()
    await p.send({ topic: req.topic, acks: -1, messages: [{ value: req.value }] })
    await p.disconnect()
    const c = k.consumer({ groupId: 'tls-group' })
    await c.connect()
    await c.subscribe({ topic: req.topic, fromBeginning: true })
    const out = []
    await new Promise((resolve, reject) => {
      c.run({ eachMessage: async ({ message }) => { out.push(message.value.toString()); if (out.length === req.n) resolve() } }).catch(reject)
    })
    await c.disconnect()
    return out
  }
  if (mode === 'sasl') {
    const k = new Kafka({ clientId: 'folio-kafkajs-test', brokers: [boot], logLevel: logLevel.NOTHING, retry: { retries: 0 },
      sasl: { mechanism: req.mechanism.toLowerCase(), username: 'alice', password: req.password } })
    const p = k.producer()
    try {
      await p.connect()
      await p.send({ topic: req.topic, acks: -1, messages: [{ value: req.value }] })
      await p.disconnect()
      return { ok: true }
    } catch (e) {
      return { ok: false, error: String(e) }
    }
  }
  throw new Error('unknown mode ' + mode)
}

main().then((out) => { process.stdout.write(JSON.stringify(out)); process.exit(0) },
  (e) => { console.error(e); process.exit(1) })
`

// kafkajs returns a function that runs one mode of the script, or skips
// the test naming the install command when node or kafkajs is missing.
func kafkajs(t *testing.T) func(mode, boot string, in any, out any) {
	t.Helper()
	node := needTool(t, "node", "apt-get install nodejs npm")
	dir := os.Getenv(kafkajsDirEnv)
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			t.Skipf("kafkajs: no home directory (%v); set %s", err, kafkajsDirEnv)
		}
		dir = filepath.Join(home, ".cache", "folio", "kafkajs")
	}
	mod := filepath.Join(dir, "node_modules", "kafkajs")
	if _, err := os.Stat(filepath.Join(mod, "package.json")); err != nil {
		t.Skipf("kafkajs is not installed in %s; install it with: %s", dir, kafkajsInstall)
	}
	script := filepath.Join(t.TempDir(), "folio_kafkajs.js")
	if err := os.WriteFile(script, []byte(kafkajsScript), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(node, "-e", "process.stdout.write(require(process.argv[1]+'/package.json').version)", mod).Output(); err == nil {
		t.Logf("kafkajs %s", out)
	}
	return func(mode, boot string, in any, out any) {
		t.Helper()
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		stdout := runTool(t, b, []string{"FOLIO_KAFKAJS=" + mod, "KAFKAJS_NO_PARTITIONER_WARNING=1"}, node, script, mode, boot)
		if err := json.Unmarshal(stdout, out); err != nil {
			t.Fatalf("kafkajs %s: %v\n%s", mode, err, stdout)
		}
	}
}

// TestKafkajsProduce produces with kafkajs's idempotent producer, acks
// -1, uncompressed and gzip (its one built-in codec), and reads the
// records byte for byte with the in-process Consumer.
func TestKafkajsProduce(t *testing.T) {
	js := kafkajs(t)
	c, sl := newLogged(t, &Options{Partitions: 3})
	for name, codec := range map[string]record.Codec{"none": record.CodecNone, "gzip": record.CodecGzip} {
		t.Run(name, func(t *testing.T) {
			topicName := "js-" + name
			recs := testRecords(t, topicName, 200)
			in := struct {
				Topic   string       `json:"topic"`
				Codec   string       `json:"codec"`
				Records []wireRecord `json:"records"`
			}{Topic: topicName, Codec: name}
			for i := range recs {
				if recs[i].Key == nil {
					// sameRecordsByKey matches by key; kafkajs sends a
					// null key as null, which kcat's and kafka-python's
					// tests cover.
					recs[i].Key = fmt.Appendf(nil, "null-%d", i)
				}
				in.Records = append(in.Records, toWire(recs[i]))
			}
			var ignored struct{}
			js("produce", c.Addr(), in, &ignored)
			sameRecordsByKey(t, readAll(t, c.Broker, topicName), recs)
			storedIdempotent(t, c.Broker, topicName, codec, "kafkajs")
		})
	}
	if !sl.used(kmsg.InitProducerID) {
		t.Error("kafkajs never asked for a producer id")
	}
}

// TestKafkajsGroupAndAdmin consumes with a kafkajs group that commits, a
// second run of the group reads only what came after, and the admin
// client creates, grows and deletes a topic and reads offsets, committed
// offsets, groups, configs and the cluster.
func TestKafkajsGroupAndAdmin(t *testing.T) {
	js := kafkajs(t)
	c, sl := newLogged(t, &Options{Partitions: 3, Topics: []string{"in"}})
	recs := testRecords(t, "in", 120)
	base := time.UnixMilli(1_700_000_000_000)
	for i := range recs {
		recs[i].Timestamp = base.Add(time.Duration(i) * time.Second)
	}
	type consumeIn struct {
		Topic string `json:"topic"`
		Group string `json:"group"`
		N     int    `json:"n"`
	}
	first := produceAll(t, c.Broker, recs[:80])
	var got []wireRecord
	js("consume", c.Addr(), consumeIn{Topic: "in", Group: "js-group", N: len(first)}, &got)
	gotRecs := fromWire(t, "in", got)
	sameRecords(t, gotRecs, first)
	for i := range gotRecs {
		if !gotRecs[i].Timestamp.Equal(first[i].Timestamp) {
			t.Fatalf("record at %d/%d: timestamp %v, want %v", first[i].Partition, first[i].Offset, gotRecs[i].Timestamp, first[i].Timestamp)
		}
	}
	hw := highWatermarks(t, c.Broker, "in")
	if cm := committed(t, c.Broker, "js-group", "in"); fmt.Sprint(cm) != fmt.Sprint(hw) {
		t.Fatalf("committed %v, want the high watermarks %v", cm, hw)
	}
	second := produceAll(t, c.Broker, recs[80:])
	got = nil
	js("consume", c.Addr(), consumeIn{Topic: "in", Group: "js-group", N: len(second)}, &got)
	sameRecords(t, fromWire(t, "in", got), second)

	at := recs[100].Timestamp
	var adm struct {
		Created    bool `json:"created"`
		Partitions int  `json:"partitions"`
		Offsets    []struct {
			Partition int32  `json:"partition"`
			Low       string `json:"low"`
			High      string `json:"high"`
		} `json:"offsets"`
		ByTime []struct {
			Partition int32  `json:"partition"`
			Offset    string `json:"offset"`
		} `json:"byTime"`
		Committed []struct {
			Partition int32  `json:"partition"`
			Offset    string `json:"offset"`
		} `json:"committed"`
		Groups  [][2]string `json:"groups"`
		Listed  []string    `json:"listed"`
		Configs [][2]string `json:"configs"`
		Topics  []string    `json:"topics"`
		Brokers []string    `json:"brokers"`
	}
	js("admin", c.Addr(), map[string]any{"create": "js-admin", "topic": "in", "group": "js-group", "time": at.UnixMilli()}, &adm)
	if !adm.Created || adm.Partitions != 4 {
		t.Fatalf("created %v with %d partitions (after growing to 4)", adm.Created, adm.Partitions)
	}
	if slices.Contains(adm.Topics, "js-admin") {
		t.Fatalf("js-admin still listed after its deletion: %v", adm.Topics)
	}
	if _, err := c.Broker.DescribeTopic("js-admin"); err == nil {
		t.Fatal("js-admin still exists after its deletion")
	}
	hw = highWatermarks(t, c.Broker, "in")
	all := append(slices.Clone(first), second...)
	num := func(s string) int64 {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, o := range adm.Offsets {
		if num(o.Low) != 0 || num(o.High) != hw[o.Partition] {
			t.Fatalf("partition %d: offsets %s..%s, want 0..%d", o.Partition, o.Low, o.High, hw[o.Partition])
		}
	}
	for _, o := range adm.ByTime {
		want := hw[o.Partition] // no record at or after: Kafka answers -1, kafkajs the high watermark
		for _, r := range all {
			if r.Partition == o.Partition && !r.Timestamp.Before(at) && r.Offset < want {
				want = r.Offset
			}
		}
		if num(o.Offset) != want {
			t.Fatalf("partition %d: offset for time %v is %s, want %d", o.Partition, at, o.Offset, want)
		}
	}
	for _, o := range adm.Committed {
		if num(o.Offset) != hw[o.Partition] {
			t.Fatalf("partition %d: committed %s, want %d", o.Partition, o.Offset, hw[o.Partition])
		}
	}
	if len(adm.Offsets) != 3 || len(adm.ByTime) != 3 || len(adm.Committed) != 3 {
		t.Fatalf("offsets for %d, %d and %d partitions, want 3", len(adm.Offsets), len(adm.ByTime), len(adm.Committed))
	}
	if len(adm.Groups) != 1 || adm.Groups[0] != [2]string{"js-group", "Empty"} || !slices.Contains(adm.Listed, "js-group") {
		t.Fatalf("groups %v, listed %v", adm.Groups, adm.Listed)
	}
	if !slices.Contains(adm.Configs, [2]string{"cleanup.policy", "delete"}) || len(adm.Configs) != 2 {
		t.Fatalf("configs %v", adm.Configs)
	}
	if len(adm.Brokers) != 1 || adm.Brokers[0] != c.Addr() {
		t.Fatalf("brokers %v, want %s", adm.Brokers, c.Addr())
	}
	for _, k := range []kmsg.Key{kmsg.CreateTopics, kmsg.CreatePartitions, kmsg.DeleteTopics, kmsg.DescribeConfigs, kmsg.DescribeGroups, kmsg.ListGroups, kmsg.OffsetFetch} {
		if !sl.used(k) {
			t.Errorf("kafkajs never sent %s", kmsg.NameForKey(k.Int16()))
		}
	}
}
