package kafkatest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/foliolog/folio"
	"github.com/foliolog/folio/record"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// javaDirEnv names the directory the Java client is built in: lib/ holds
// kafka-clients and its dependencies as Maven copied them, classes/ the
// compiled kafkatest/testdata/java sources, m2/ Maven's repository.
// Default $HOME/.cache/folio/java (what .ci/run fills).
const javaDirEnv = "FOLIO_JAVA_DIR"

// javaSrc is the Java client's source tree: a pom.xml naming kafka-clients
// and an slf4j backend, and one program.
const javaSrc = "testdata/java"

// javaFetchTimeout bounds Maven's fetch of the dependencies, the one step
// that needs the network (a cold fetch takes about a minute).
const javaFetchTimeout = 3 * time.Minute

// javaBuilt is the result of building the Java client, once per test
// binary: the class path, or why the tests skip or fail.
var javaBuilt struct {
	once      sync.Once
	classpath string
	version   string
	skip      string
	fail      string
}

// javaClient returns a function that runs one mode of the Java client
// (kafkatest/testdata/java) with args and stdin and returns its standard
// output; the first call in a test binary builds it. It skips the test,
// saying why, when java, javac or mvn is missing or Maven cannot fetch
// kafka-clients.
func javaClient(t *testing.T) func(stdin []byte, mode string, args ...string) []byte {
	t.Helper()
	javaBuilt.once.Do(buildJava)
	if javaBuilt.skip != "" {
		t.Skip(javaBuilt.skip)
	}
	if javaBuilt.fail != "" {
		t.Fatal(javaBuilt.fail)
	}
	t.Logf("Java client: kafka-clients %s", javaBuilt.version)
	return func(stdin []byte, mode string, args ...string) []byte {
		t.Helper()
		return runTool(t, stdin, nil, "java", javaArgs(javaBuilt.classpath, mode, args...)...)
	}
}

// javaArgs is the java command line for one run of the client: a small
// heap and the client's own log at warnings and up, on standard error.
func javaArgs(classpath, mode string, args ...string) []string {
	return append([]string{"-Xmx256m", "-XX:TieredStopAtLevel=1",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-Dorg.slf4j.simpleLogger.logFile=System.err",
		"-cp", classpath, "folio.JavaClient", mode}, args...)
}

// buildJava fills javaBuilt: it fetches the dependencies with Maven into
// DIR/lib unless DIR/lib already holds those of this pom.xml, then
// compiles the sources into DIR/classes unless they are there already.
// Each step writes its output beside the old one and renames it over
// when whole, and records what it was built from (a SHA-256) in a stamp
// file, so an interrupted build is redone and a cached one costs nothing.
func buildJava() {
	b := &javaBuilt
	for _, tool := range []string{"java", "javac"} {
		if _, err := exec.LookPath(tool); err != nil {
			b.skip = fmt.Sprintf("%s is not installed (%v); install a JDK 17 or later (apt-get install default-jdk-headless) and Maven", tool, err)
			return
		}
	}
	dir := os.Getenv(javaDirEnv)
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			b.skip = fmt.Sprintf("no home directory (%v); set %s", err, javaDirEnv)
			return
		}
		dir = filepath.Join(home, ".cache", "folio", "java")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		b.fail = err.Error()
		return
	}
	pom, err := filepath.Abs(filepath.Join(javaSrc, "pom.xml"))
	if err != nil {
		b.fail = err.Error()
		return
	}
	pomSum, err := fileSums(pom)
	if err != nil {
		b.fail = err.Error()
		return
	}
	lib := filepath.Join(dir, "lib")
	if !stampIs(lib, pomSum) {
		if _, err := exec.LookPath("mvn"); err != nil {
			b.skip = fmt.Sprintf("mvn is not installed (%v), and %s holds no kafka-clients for %s; install Maven (apt-get install maven) or set %s", err, lib, pom, javaDirEnv)
			return
		}
		if err := fetchJavaDeps(dir, pom, pomSum); err != nil {
			b.skip = fmt.Sprintf("Maven could not fetch kafka-clients and its dependencies into %s: %v", lib, err)
			return
		}
	}
	var sources []string
	err = filepath.WalkDir(filepath.Join(javaSrc, "src"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".java") {
			sources = append(sources, p)
		}
		return err
	})
	if err != nil {
		b.fail = err.Error()
		return
	}
	slices.Sort(sources)
	srcSum, err := fileSums(append([]string{filepath.Join(lib, stampName)}, sources...)...)
	if err != nil {
		b.fail = err.Error()
		return
	}
	classes := filepath.Join(dir, "classes")
	libPath := filepath.Join(lib, "*")
	if !stampIs(classes, srcSum) {
		tmp := classes + ".new"
		os.RemoveAll(tmp)
		args := append([]string{"--release", "17", "-encoding", "UTF-8", "-d", tmp, "-cp", libPath}, sources...)
		if out, err := exec.Command("javac", args...).CombinedOutput(); err != nil {
			b.fail = fmt.Sprintf("javac %s: %v\n%s", strings.Join(args, " "), err, out)
			return
		}
		if err := replaceStamped(tmp, classes, srcSum); err != nil {
			b.fail = err.Error()
			return
		}
	}
	b.classpath = classes + string(os.PathListSeparator) + libPath
	out, err := exec.Command("java", javaArgs(b.classpath, "version", "-")...).Output()
	if err != nil {
		b.fail = fmt.Sprintf("the Java client does not start: %v", err)
		return
	}
	b.version = strings.Trim(string(out), `"`)
}

// fetchJavaDeps runs Maven's dependency:copy-dependencies for pom into
// DIR/lib, with DIR/m2 as Maven's repository, in at most
// javaFetchTimeout.
func fetchJavaDeps(dir, pom, pomSum string) error {
	lib := filepath.Join(dir, "lib")
	tmp := lib + ".new"
	os.RemoveAll(tmp)
	ctx, cancel := context.WithTimeout(context.Background(), javaFetchTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "mvn", "-B", "-q", "-Dstyle.color=never", "-f", pom, "-Dmaven.repo.local="+filepath.Join(dir, "m2"),
		"org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies",
		"-DincludeScope=runtime", "-DoutputDirectory="+tmp)
	out, err := cmd.CombinedOutput()
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w after %v", ctx.Err(), javaFetchTimeout)
		}
		return fmt.Errorf("%v: %s", err, firstErrors(out, 1))
	}
	return replaceStamped(tmp, lib, pomSum)
}

// stampName is the file in a built directory naming what it was built
// from.
const stampName = ".folio-stamp"

func stampIs(dir, sum string) bool {
	b, err := os.ReadFile(filepath.Join(dir, stampName))
	return err == nil && string(b) == sum
}

// replaceStamped stamps tmp with sum and renames it over dir.
func replaceStamped(tmp, dir, sum string) error {
	if err := os.WriteFile(filepath.Join(tmp, stampName), []byte(sum), 0o644); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	return os.Rename(tmp, dir)
}

// fileSums is the SHA-256 of the files' names and contents.
func fileSums(paths ...string) (string, error) {
	h := sha256.New()
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", filepath.Base(p), len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// firstErrors returns Maven's first n error lines, which say what it
// could not resolve (the lines after them are advice), or its whole
// output if it printed none.
func firstErrors(out []byte, n int) string {
	var lines []string
	for _, l := range strings.Split(string(out), "\n") {
		if _, msg, ok := strings.Cut(l, "[ERROR] "); ok && strings.TrimSpace(msg) != "" && len(lines) < n {
			lines = append(lines, msg)
		}
	}
	if len(lines) == 0 {
		return string(out)
	}
	return strings.Join(lines, "\n")
}

// javaRecordLines writes records in the Java client's input form, one a
// line: TIMESTAMP KEY VALUE HEADERS, bytes as hex, "-" null, "." empty.
func javaRecordLines(recs []folio.Record) []byte {
	field := func(b []byte) string {
		switch {
		case b == nil:
			return "-"
		case len(b) == 0:
			return "."
		}
		return hex.EncodeToString(b)
	}
	var buf bytes.Buffer
	for _, r := range recs {
		hs := "."
		if len(r.Headers) > 0 {
			var parts []string
			for _, h := range r.Headers {
				parts = append(parts, hex.EncodeToString([]byte(h.Key))+":"+field(h.Value))
			}
			hs = strings.Join(parts, ",")
		}
		fmt.Fprintf(&buf, "%d %s %s %s\n", r.Timestamp.UnixMilli(), field(r.Key), field(r.Value), hs)
	}
	return buf.Bytes()
}

// javaProduce decodes what a Java produce printed: where each of the n
// records went. It fails the test if the producer retried a send: on
// loopback to a healthy server, a retry is an error the server answered
// (an out-of-order sequence, say) that the client papered over.
func javaProduce(t *testing.T, out []byte, n int) [][2]int64 {
	t.Helper()
	var res struct {
		Acks    [][2]int64 `json:"acks"`
		Retries int64      `json:"retries"`
	}
	if err := json.Unmarshal(out, &res); err != nil || len(res.Acks) != n {
		t.Fatalf("acknowledgements: %v, %d of %d\n%.300s", err, len(res.Acks), n, out)
	}
	if res.Retries != 0 {
		t.Fatalf("the producer retried %d sends", res.Retries)
	}
	return res.Acks
}

// javaRecords decodes the records a Java consume printed, checking the
// timestamps against want's (same partitions and offsets) too.
func javaRecords(t *testing.T, topicName string, out []byte, want []folio.Record) []folio.Record {
	t.Helper()
	var ws []wireRecord
	if err := json.Unmarshal(out, &ws); err != nil {
		t.Fatalf("the Java client's records: %v\n%s", err, out)
	}
	got := fromWire(t, topicName, ws)
	sameRecords(t, got, want)
	for i := range got {
		if !got[i].Timestamp.Equal(want[i].Timestamp) {
			t.Fatalf("record at %d/%d: timestamp %v, want %v", want[i].Partition, want[i].Offset, got[i].Timestamp, want[i].Timestamp)
		}
	}
	return got
}

// timedRecords is testRecords with timestamps a millisecond apart from a
// fixed time.
func timedRecords(t *testing.T, topicName string, n int) []folio.Record {
	recs := testRecords(t, topicName, n)
	base := time.UnixMilli(1_700_000_000_000)
	for i := range recs {
		recs[i].Timestamp = base.Add(time.Duration(i) * time.Millisecond)
	}
	return recs
}

// TestJavaBuild builds the Java client (fetching its dependencies unless
// they are cached) and starts it: .ci/run runs it alone to fill the cache
// before the suite, bounded in time.
func TestJavaBuild(t *testing.T) {
	javaClient(t)
	if !strings.HasPrefix(javaBuilt.version, "4.") {
		t.Fatalf("the Java client runs kafka-clients %q, want 4.x (testdata/java/pom.xml)", javaBuilt.version)
	}
}

// TestJavaProduceEveryCodec produces with the Java client's idempotent
// producer, acks=all, in each of Kafka's codecs, and reads the records
// byte for byte, timestamps included, with the in-process Consumer at the
// partitions and offsets the producer was acknowledged with, from batches
// stored in that codec with a producer id.
func TestJavaProduceEveryCodec(t *testing.T) {
	java := javaClient(t)
	c, sl := newLogged(t, &Options{Partitions: 3})
	want := map[string]record.Codec{"none": record.CodecNone, "gzip": record.CodecGzip, "snappy": record.CodecSnappy, "lz4": record.CodecLZ4, "zstd": record.CodecZstd}
	for _, name := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		t.Run(name, func(t *testing.T) {
			topicName := "java-" + name
			recs := timedRecords(t, topicName, 200)
			acked := javaProduce(t, java(javaRecordLines(recs), "produce", c.Addr(), topicName, name), len(recs))
			for i := range recs {
				recs[i].Partition, recs[i].Offset = int32(acked[i][0]), acked[i][1]
			}
			sortRecords(recs)
			got := readAll(t, c.Broker, topicName)
			sameRecords(t, got, recs)
			for i := range got {
				if !got[i].Timestamp.Equal(recs[i].Timestamp) {
					t.Fatalf("record at %d/%d: timestamp %v, want %v", recs[i].Partition, recs[i].Offset, got[i].Timestamp, recs[i].Timestamp)
				}
			}
			storedIdempotent(t, c.Broker, topicName, want[name], "the Java client")
		})
	}
	if !sl.used(kmsg.InitProducerID) {
		t.Error("the Java client never asked for a producer id")
	}
}

// TestJavaConsumeAndGroup reads what the in-process Producer wrote with
// the Java consumer: from the start of every partition without a group,
// byte for byte with the timestamps (read_uncommitted and
// read_committed), then as a classic group that
// commits; a second run of the group reads only what came after the
// commit.
func TestJavaConsumeAndGroup(t *testing.T) {
	java := javaClient(t)
	c, sl := newLogged(t, &Options{Partitions: 3, Topics: []string{"in"}})
	recs := timedRecords(t, "in", 150)
	first := produceAll(t, c.Broker, recs[:100])
	javaRecords(t, "in", java(nil, "consume", c.Addr(), "in", strconv.Itoa(len(first))), first)
	// read_committed: ListOffsets and Fetch at isolation level 1, bounded
	// by the high watermark while there are no transactions.
	javaRecords(t, "in", java(nil, "consume", c.Addr(), "in", strconv.Itoa(len(first)), "isolation.level=read_committed"), first)

	javaRecords(t, "in", java(nil, "group", c.Addr(), "in", "java-group", strconv.Itoa(len(first))), first)
	hw := highWatermarks(t, c.Broker, "in")
	if cm := committed(t, c.Broker, "java-group", "in"); fmt.Sprint(cm) != fmt.Sprint(hw) {
		t.Fatalf("committed %v, want the high watermarks %v", cm, hw)
	}
	second := produceAll(t, c.Broker, recs[100:])
	javaRecords(t, "in", java(nil, "group", c.Addr(), "in", "java-group", strconv.Itoa(len(second))), second)

	var g struct {
		State   string          `json:"state"`
		Members int             `json:"members"`
		Simple  bool            `json:"simple"`
		Offsets map[int32]int64 `json:"offsets"`
	}
	out := java(nil, "groups", c.Addr(), "java-group", "in")
	if err := json.Unmarshal(out, &g); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	hw = highWatermarks(t, c.Broker, "in")
	if g.State != "Empty" || g.Members != 0 || g.Simple || fmt.Sprint(g.Offsets) != fmt.Sprint(hw) {
		t.Fatalf("the admin client described the group as %+v; want Empty, no members, not simple, offsets %v", g, hw)
	}
	if _, err := c.Broker.GroupLag("java-group"); !errors.Is(err, folio.ErrGroupNotFound) {
		t.Fatalf("java-group after the admin client deleted it: %v", err)
	}
	for _, k := range []kmsg.Key{kmsg.FindCoordinator, kmsg.JoinGroup, kmsg.SyncGroup, kmsg.OffsetFetch, kmsg.OffsetCommit, kmsg.LeaveGroup, kmsg.Fetch, kmsg.ListOffsets, kmsg.DescribeGroups, kmsg.DeleteGroups} {
		if !sl.used(k) {
			t.Errorf("the Java client never sent %s", kmsg.NameForKey(k.Int16()))
		}
	}
}

// TestJavaAdmin drives the Java AdminClient: it creates a topic with
// configs, describes it and an existing one (partitions, leaders, topic
// ids), reads their configs, lists offsets (earliest, latest, max
// timestamp, by timestamp) and deletes records; each answer is checked
// against the Broker, and a Java consumer reading from the start
// afterwards gets exactly the records past the deletion.
func TestJavaAdmin(t *testing.T) {
	java := javaClient(t)
	c, sl := newLogged(t, &Options{Partitions: 3, Topics: []string{"in"}})
	recs := timedRecords(t, "in", 120)
	// Record 100 goes last in time, so that by-timestamp and
	// max-timestamp answers differ from earliest and latest.
	recs[100].Timestamp = recs[len(recs)-1].Timestamp.Add(time.Hour)
	all := produceAll(t, c.Broker, recs)
	hw := highWatermarks(t, c.Broker, "in")
	delBefore := hw[0] / 2
	at := recs[60].Timestamp
	out := java(nil, "admin", c.Addr(), "in", "java-admin", strconv.FormatInt(at.UnixMilli(), 10), "0", strconv.FormatInt(delBefore, 10))
	type partition struct {
		Partition int32 `json:"partition"`
		Leader    int32 `json:"leader"`
		Replicas  int   `json:"replicas"`
		ISR       int   `json:"isr"`
	}
	var adm struct {
		Topics map[string]struct {
			ID         string      `json:"id"`
			Internal   bool        `json:"internal"`
			Partitions []partition `json:"partitions"`
		} `json:"topics"`
		Configs             map[string]map[string][2]*string `json:"configs"`
		Earliest            map[int32][2]int64               `json:"earliest"`
		Latest              map[int32][2]int64               `json:"latest"`
		MaxTimestamp        map[int32][2]int64               `json:"maxTimestamp"`
		ByTime              map[int32][2]int64               `json:"byTime"`
		LowWatermark        int64                            `json:"lowWatermark"`
		EarliestAfterDelete map[int32][2]int64               `json:"earliestAfterDelete"`
		GrownPartitions     int                              `json:"grownPartitions"`
		AlteredRetention    string                           `json:"alteredRetention"`
		ListedAfterDelete   bool                             `json:"listedAfterDelete"`
	}
	if err := json.Unmarshal(out, &adm); err != nil {
		t.Fatalf("the admin client's answers: %v\n%s", err, out)
	}
	// java-admin is gone by now: its id is checked for being one.
	in, err := c.Broker.DescribeTopic("in")
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{"in": base64.RawURLEncoding.EncodeToString(in.ID[:])}
	for name, n := range map[string]int{"in": 3, "java-admin": 2} {
		d := adm.Topics[name]
		if len(d.Partitions) != n {
			t.Fatalf("%s: %d partitions described, want %d", name, len(d.Partitions), n)
		}
		id, err := base64.RawURLEncoding.DecodeString(d.ID)
		if err != nil || len(id) != 16 || d.Internal || (ids[name] != "" && d.ID != ids[name]) || name != "in" && d.ID == ids["in"] {
			t.Fatalf("%s: topic id %s (internal %v), want %s", name, d.ID, d.Internal, ids[name])
		}
		for i, p := range d.Partitions {
			if p.Partition != int32(i) || p.Leader < 0 || p.Replicas != 1 || p.ISR != 1 {
				t.Fatalf("%s: partition %+v", name, p)
			}
		}
	}
	if adm.GrownPartitions != 4 || adm.AlteredRetention != "7200000" || adm.ListedAfterDelete {
		t.Fatalf("java-admin after growing, altering and deleting it: %d partitions, retention.ms %s, listed after its deletion %v",
			adm.GrownPartitions, adm.AlteredRetention, adm.ListedAfterDelete)
	}
	if _, err := c.Broker.DescribeTopic("java-admin"); !errors.Is(err, folio.ErrUnknownTopic) {
		t.Fatalf("java-admin after its deletion: %v", err)
	}
	config := func(topicName, key string) [2]string {
		e, ok := adm.Configs[topicName][key]
		if !ok || e[0] == nil || e[1] == nil {
			t.Fatalf("%s: no %s in the configs described: %v", topicName, key, adm.Configs[topicName])
		}
		return [2]string{*e[0], *e[1]}
	}
	for _, c := range []struct {
		topic, key string
		want       [2]string
	}{
		{"java-admin", "cleanup.policy", [2]string{"compact", "DYNAMIC_TOPIC_CONFIG"}},
		{"java-admin", "retention.ms", [2]string{"3600000", "DYNAMIC_TOPIC_CONFIG"}},
		{"in", "cleanup.policy", [2]string{"delete", "DEFAULT_CONFIG"}},
	} {
		if got := config(c.topic, c.key); got != c.want {
			t.Errorf("%s: %s is %v, want %v", c.topic, c.key, got, c.want)
		}
	}

	for p := range int32(3) {
		if got := adm.Earliest[p][0]; got != 0 {
			t.Errorf("partition %d: earliest %d, want 0", p, got)
		}
		if got := adm.Latest[p][0]; got != hw[p] {
			t.Errorf("partition %d: latest %d, want %d", p, got, hw[p])
		}
		// The first record at or after at; the record with the greatest
		// timestamp (the first of them).
		byTime, maxTS := [2]int64{-1, -1}, [2]int64{-1, -1}
		for _, r := range all {
			if r.Partition != p {
				continue
			}
			if ms := r.Timestamp.UnixMilli(); !r.Timestamp.Before(at) && (byTime[0] < 0 || r.Offset < byTime[0]) {
				byTime = [2]int64{r.Offset, ms}
			}
			if ms := r.Timestamp.UnixMilli(); ms > maxTS[1] {
				maxTS = [2]int64{r.Offset, ms}
			}
		}
		if got := adm.ByTime[p]; got != byTime {
			t.Errorf("partition %d: offset and timestamp for time %d: %v, want %v", p, at.UnixMilli(), got, byTime)
		}
		if got := adm.MaxTimestamp[p]; got != maxTS {
			t.Errorf("partition %d: max timestamp at %v, want %v", p, got, maxTS)
		}
		wantStart := int64(0)
		if p == 0 {
			wantStart = delBefore
		}
		if got := adm.EarliestAfterDelete[p][0]; got != wantStart {
			t.Errorf("partition %d: earliest after DeleteRecords %d, want %d", p, got, wantStart)
		}
	}
	if adm.LowWatermark != delBefore {
		t.Errorf("DeleteRecords answered low watermark %d, want %d", adm.LowWatermark, delBefore)
	}
	if in, err := c.Broker.DescribeTopic("in"); err != nil || in.Partitions[0].LogStartOffset != delBefore {
		t.Fatalf("partition 0 starts at %v after DeleteRecords before %d (%v)", in.Partitions[0].LogStartOffset, delBefore, err)
	}
	if t.Failed() {
		return
	}
	kept := slices.DeleteFunc(slices.Clone(all), func(r folio.Record) bool { return r.Partition == 0 && r.Offset < delBefore })
	javaRecords(t, "in", java(nil, "consume", c.Addr(), "in", strconv.Itoa(len(kept))), kept)
	for _, k := range []kmsg.Key{kmsg.CreateTopics, kmsg.Metadata, kmsg.DescribeConfigs, kmsg.ListOffsets, kmsg.DeleteRecords, kmsg.IncrementalAlterConfigs, kmsg.CreatePartitions, kmsg.DeleteTopics} {
		if !sl.used(k) {
			t.Errorf("the Java client never sent %s", kmsg.NameForKey(k.Int16()))
		}
	}
}

// TestJavaProducePipelined produces to one partition with the Java
// client's idempotent producer in small batches, five requests in flight
// on one connection (its default with idempotence): the records are
// acknowledged, and stored, at consecutive offsets in the order sent, each
// once.
func TestJavaProducePipelined(t *testing.T) {
	java := javaClient(t)
	c, sl := newLogged(t, &Options{Partitions: 1})
	recs := timedRecords(t, "java-pipelined", 5000)
	acked := javaProduce(t, java(javaRecordLines(recs), "produce", c.Addr(), "java-pipelined", "lz4",
		"batch.size=1024", "linger.ms=0", "max.in.flight.requests.per.connection=5"), len(recs))
	for i := range recs {
		if acked[i] != [2]int64{0, int64(i)} {
			t.Fatalf("record %d acknowledged at %d/%d, want 0/%d", i, acked[i][0], acked[i][1], i)
		}
		recs[i].Partition, recs[i].Offset = 0, int64(i)
	}
	sameRecords(t, readAll(t, c.Broker, "java-pipelined"), recs)
	batches := storedBatches(t, c.Broker, "java-pipelined")
	if len(batches) < 20 {
		t.Fatalf("%d batches: the producer did not pipeline small batches", len(batches))
	}
	t.Logf("%d batches", len(batches))
	if !sl.used(kmsg.Produce) {
		t.Error("no Produce request seen")
	}
}

// TestJavaConsumeBatchesPastFetchLimits reads records larger than the Java
// consumer's fetch.max.bytes and max.partition.fetch.bytes: as in Kafka,
// the first batch of a fetch is returned whole whatever the limits, and
// the consumer gets every record.
func TestJavaConsumeBatchesPastFetchLimits(t *testing.T) {
	java := javaClient(t)
	c, _ := newLogged(t, &Options{Partitions: 2, Topics: []string{"big"}})
	recs := timedRecords(t, "big", 40)
	r := testRand(t)
	for i := range recs {
		recs[i].Value = randomBytes(r, 5000+r.IntN(20000))
	}
	all := produceAll(t, c.Broker, recs)
	javaRecords(t, "big", java(nil, "consume", c.Addr(), "big", strconv.Itoa(len(all)),
		"fetch.max.bytes=1024", "max.partition.fetch.bytes=512", "fetch.min.bytes=1"), all)
}

// TestJavaTransactionalProducerRefused: a transactional Java producer,
// which Folio does not serve, fails in initTransactions with a clear
// error, well before its max.block.ms, rather than hanging.
func TestJavaTransactionalProducerRefused(t *testing.T) {
	java := javaClient(t)
	c, _ := newLogged(t, nil)
	var res struct {
		Error   string `json:"error"`
		Message string `json:"message"`
		MS      int64  `json:"ms"`
	}
	out := java(nil, "transactional", c.Addr(), "java-txn")
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Logf("initTransactions: %s: %s after %d ms", res.Error, res.Message, res.MS)
	if res.Error != "org.apache.kafka.common.errors.TransactionalIdAuthorizationException" || res.MS > 10_000 {
		t.Fatalf("initTransactions failed with %s (%s) after %d ms, want TransactionalIdAuthorizationException at once", res.Error, res.Message, res.MS)
	}
}

// TestJavaGroupSplit runs two Java consumers in one classic group, with
// the eager range assignor and with the cooperative sticky one (whose
// rebalances take two rounds, the second after the first member revokes
// what it gives up): they split the topic's partitions between them, read
// every record written afterwards exactly once, byte for byte as the
// Broker holds them, and commit the high watermarks.
func TestJavaGroupSplit(t *testing.T) {
	java := javaClient(t)
	c, sl := newLogged(t, &Options{Partitions: 4})
	for name, assignor := range map[string]string{
		"range":              "org.apache.kafka.clients.consumer.RangeAssignor",
		"cooperative-sticky": "org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
	} {
		t.Run(name, func(t *testing.T) {
			topicName, groupID := "java-split-"+name, "java-split-"+name
			if _, err := c.Broker.CreateTopic(topicName, folio.TopicConfig{Partitions: 4}); err != nil {
				t.Fatal(err)
			}
			recs := timedRecords(t, topicName, 200)
			for i := range recs {
				if recs[i].Key == nil {
					recs[i].Key = fmt.Appendf(nil, "null-%d", i) // sameRecordsByKey matches by key
				}
			}
			out := java(javaRecordLines(recs), "split", c.Addr(), topicName, groupID, assignor)
			var res struct {
				A       []int32      `json:"a"`
				B       []int32      `json:"b"`
				Records []wireRecord `json:"records"`
			}
			if err := json.Unmarshal(out, &res); err != nil {
				t.Fatalf("%v\n%.300s", err, out)
			}
			parts := append(slices.Clone(res.A), res.B...)
			slices.Sort(parts)
			if len(res.A) == 0 || len(res.B) == 0 || !slices.Equal(parts, []int32{0, 1, 2, 3}) {
				t.Fatalf("the members hold partitions %v and %v, want a split of 0-3", res.A, res.B)
			}
			stored := readAll(t, c.Broker, topicName)
			sameRecordsByKey(t, stored, recs)
			sameRecords(t, fromWire(t, topicName, res.Records), stored)
			hw := highWatermarks(t, c.Broker, topicName)
			if cm := committed(t, c.Broker, groupID, topicName); fmt.Sprint(cm) != fmt.Sprint(hw) {
				t.Fatalf("committed %v, want the high watermarks %v", cm, hw)
			}
		})
	}
	if !sl.used(kmsg.Heartbeat) {
		t.Error("the Java consumers never sent a heartbeat")
	}
}

// javaFails runs one mode of the Java client (javaClient must have been
// called) and fails the test unless the client fails; it returns the
// client's standard error.
func javaFails(t *testing.T, stdin []byte, mode string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "java", javaArgs(javaBuilt.classpath, mode, args...)...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err == nil || ctx.Err() != nil {
		t.Fatalf("java %s: %v (want a failure, not a success or a hang)\nstdout:\n%s", mode, err, stdout.Bytes())
	}
	return stderr.String()
}

// TestJavaSASL logs in with the Java client's PLAIN, SCRAM-SHA-256 and
// SCRAM-SHA-512 login modules, producing one record with each, and is
// refused with a wrong password (nothing written, the server logs the
// failed login).
func TestJavaSASL(t *testing.T) {
	java := javaClient(t)
	c, sl := saslCluster(t)
	auth := func(mech, password string) []string {
		module := "org.apache.kafka.common.security.scram.ScramLoginModule"
		if mech == "PLAIN" {
			module = "org.apache.kafka.common.security.plain.PlainLoginModule"
		}
		return []string{"security.protocol=SASL_PLAINTEXT", "sasl.mechanism=" + mech, "max.block.ms=10000",
			fmt.Sprintf(`sasl.jaas.config=%s required username="alice" password="%s";`, module, password)}
	}
	var want []string
	for _, mech := range saslMechanisms {
		rec := []folio.Record{{Value: []byte("java " + mech), Timestamp: time.UnixMilli(1_700_000_000_000)}}
		javaProduce(t, java(javaRecordLines(rec), "produce", append([]string{c.Addr(), "s", "none"}, auth(mech, "s3cret")...)...), 1)
		want = append(want, "java "+mech)
		stderr := javaFails(t, javaRecordLines(rec), "produce", append([]string{c.Addr(), "s", "none"}, auth(mech, "wrong")...)...)
		if !strings.Contains(stderr, "SaslAuthenticationException") {
			t.Errorf("%s with a wrong password: the client failed without naming the failed login:\n%s", mech, lastLines(stderr, 5))
		}
		if !sl.dropFailedLogins() {
			t.Fatalf("%s: the client failed, but the server logged no failed login", mech)
		}
	}
	if got := values(t, c); !slices.Equal(got, want) {
		t.Fatalf("values %q, want %q", got, want)
	}
}

// TestJavaTLS produces and consumes over TLS, the Java client verifying
// the server's certificate (and its IP address) against the test's CA.
func TestJavaTLS(t *testing.T) {
	java := javaClient(t)
	c, caFile := tlsCluster(t)
	tlsConf := []string{"security.protocol=SSL", "ssl.truststore.type=PEM", "ssl.truststore.location=" + caFile}
	recs := timedRecords(t, "s", 20)
	acked := javaProduce(t, java(javaRecordLines(recs), "produce", append([]string{c.Addr(), "s", "zstd"}, tlsConf...)...), len(recs))
	for i := range recs {
		recs[i].Partition, recs[i].Offset = int32(acked[i][0]), acked[i][1]
	}
	sortRecords(recs)
	sameRecords(t, readAll(t, c.Broker, "s"), recs)
	javaRecords(t, "s", java(nil, "consume", append([]string{c.Addr(), "s", strconv.Itoa(len(recs))}, tlsConf...)...), recs)
}

// TestJavaStaticMember: a static member (group.instance.id) does not
// leave the group when it closes, so its second run rejoins while the
// group still holds its first member id; the coordinator hands the
// instance the new member id, as Kafka does, and the second run resumes
// at the first run's commit.
func TestJavaStaticMember(t *testing.T) {
	java := javaClient(t)
	c, sl := newLogged(t, &Options{Partitions: 2, Topics: []string{"in"}})
	recs := timedRecords(t, "in", 60)
	static := []string{"group.instance.id=java-static-1", "session.timeout.ms=30000"}
	first := produceAll(t, c.Broker, recs[:40])
	javaRecords(t, "in", java(nil, "group", append([]string{c.Addr(), "in", "java-static", strconv.Itoa(len(first))}, static...)...), first)
	hw := highWatermarks(t, c.Broker, "in")
	if cm := committed(t, c.Broker, "java-static", "in"); fmt.Sprint(cm) != fmt.Sprint(hw) {
		t.Fatalf("committed %v, want the high watermarks %v", cm, hw)
	}
	second := produceAll(t, c.Broker, recs[40:])
	javaRecords(t, "in", java(nil, "group", append([]string{c.Addr(), "in", "java-static", strconv.Itoa(len(second))}, static...)...), second)
	if !sl.used(kmsg.JoinGroup) {
		t.Error("no JoinGroup seen")
	}
}

// TestJavaRecordTooLarge: a record past the topic's max.message.bytes
// fails the Java producer's send with RecordTooLargeException (Kafka's
// MESSAGE_TOO_LARGE), and writes nothing. (A batch of several records
// past the limit the producer splits into batches of batch.size, so with
// batch.size above max.message.bytes it splits until delivery.timeout.ms,
// against Kafka as against Folio: no test of that.)
func TestJavaRecordTooLarge(t *testing.T) {
	javaClient(t)
	c, _ := newLogged(t, nil)
	if _, err := c.Broker.CreateTopic("small", folio.TopicConfig{Partitions: 1, MaxMessageBytes: 2000}); err != nil {
		t.Fatal(err)
	}
	big := []folio.Record{{Value: bytes.Repeat([]byte{'x'}, 5000), Timestamp: time.UnixMilli(1_700_000_000_000)}}
	// The producer's own limit (max.request.size) is larger, so the
	// broker is the one to refuse it.
	stderr := javaFails(t, javaRecordLines(big), "produce", c.Addr(), "small", "none")
	if !strings.Contains(stderr, "RecordTooLargeException") {
		t.Fatalf("the producer failed, but not with RecordTooLargeException:\n%s", lastLines(stderr, 8))
	}
	if hw := highWatermarks(t, c.Broker, "small"); hw[0] != 0 {
		t.Fatalf("high watermark %d after a refused record", hw[0])
	}
}
