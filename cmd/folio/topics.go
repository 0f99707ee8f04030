package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/foliolog/folio"
	"github.com/foliolog/folio/topic"
)

// configFlag sets one topic setting through topic.Config.Set, so the
// command line takes exactly the syntax the catalog stores ("7d",
// "512MiB", "interval:100ms"). A bad setting is kept in err, not returned
// to the flag package: Set's error names the key and the value already,
// which the flag package's "invalid value ... for flag" would say again.
type configFlag struct {
	cfg *topic.Config
	key string // "" for -config key=value
	err *error // the first bad setting
}

func (f configFlag) String() string { return "" }

func (f configFlag) Set(v string) error {
	if err := f.set(v); err != nil && *f.err == nil {
		*f.err = err
	}
	return nil
}

func (f configFlag) set(v string) error {
	key := f.key
	if key == "" {
		k, val, ok := strings.Cut(v, "=")
		if !ok {
			return fmt.Errorf("-config %q: want key=value", v)
		}
		key, v = strings.TrimSpace(k), strings.TrimSpace(val)
		if key == topic.KeyPartitions {
			return fmt.Errorf("-config %s: use -partitions for the partition count", key)
		}
	}
	return f.cfg.Set(key, v)
}

// settingHelp says what each topic setting does and which values it takes;
// the help of its flag adds the default. Every value named here is checked
// against topic.Config.Set by TestSettingHelp.
var settingHelp = map[string]string{
	topic.KeyRetentionBytes:         "the most bytes a partition keeps before its oldest segments are deleted: a size (512MiB, 10GiB) or unlimited",
	topic.KeyRetentionAge:           "how long records are kept: a duration (12h, 7d) or unlimited",
	topic.KeySegmentBytes:           "the size at which a partition starts a new segment (64MiB, 1GiB)",
	topic.KeySegmentAge:             "the age at which a partition starts a new segment (1h, 7d)",
	topic.KeyIndexInterval:          "the bytes of batches between two entries of a segment's offset and time indexes (a size: 128, 4KiB; 0 indexes every batch); new segments take a change",
	topic.KeyFlush:                  "what an acknowledgement waits for: sync (an fsync covers the record), none (the page cache: a power cut can lose it), interval:<duration> (an fsync every duration, e.g. interval:100ms) or every:<n> (an fsync every n records, e.g. every:1000)",
	topic.KeyReadPath:               "how reads reach the segment files: mmap (mapped views; sockets get write(2) from the mapping) or sendfile (pread in process; sockets get sendfile(2))",
	topic.KeyCleanup:                "delete (retention deletes old segments), compact (keep each key's latest record) or compact,delete (both)",
	topic.KeyMinCleanableDirtyRatio: "compacted topics: the share of not yet cleaned records at which a partition is cleaned, above 0 and at most 1 (0.5)",
	topic.KeyMinCompactionLag:       "compacted topics: how old a record must be before cleaning may drop it (a duration: 0, 1h)",
	topic.KeyDeleteRetention:        "compacted topics: how long a tombstone stays once cleaned (a duration: 1d; 0 keeps none)",
	topic.KeyTimestampType:          "whose clock stamps records: CreateTime (the producer's) or LogAppendTime (the log's, at append)",
	topic.KeyMaxMessageBytes:        "the largest batch the topic accepts (a size: 1MiB, 4096)",
	topic.KeyCompression:            "how batches are stored: producer (as sent), none, gzip, snappy, lz4 or zstd",
	topic.KeyUnclean:                "whether a replica outside the ISR may lead a replicated partition when no in-sync one is left, losing records: true or false",
}

func topicsCreate(e env, args []string) (err error) {
	fs, dir := newFlags(e, "topics create", "topics create -topic T [-partitions N] [-<setting> value ...] [-config key=value ...]")
	name := fs.String("topic", "", "the topic to create (required)")
	parts := fs.Int("partitions", 1, "the number of partitions")
	var cfg topic.Config
	var cfgErr error
	fs.Var(configFlag{cfg: &cfg, err: &cfgErr}, "config", "a topic setting as key=value, the same as -key value (repeatable); keys: "+strings.Join(topic.Keys[1:], ", "))
	defaults := map[string]string{}
	for _, s := range (topic.Config{}).Settings() {
		defaults[s.Key] = s.Value
	}
	for _, k := range topic.Keys {
		if k == topic.KeyPartitions {
			continue
		}
		fs.Var(configFlag{cfg: &cfg, key: k, err: &cfgErr}, k, settingHelp[k]+" (default "+defaults[k]+")")
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if cfgErr != nil {
		return usagef("%v", cfgErr)
	}
	if *name == "" {
		return usagef("-topic is required")
	}
	if *parts < 1 || *parts > topic.MaxPartitions {
		return usagef("-partitions %d: want 1 to %d", *parts, topic.MaxPartitions)
	}
	cfg.Partitions = int32(*parts)
	if err := cfg.Validate(); err != nil {
		return usagef("%v", err)
	}
	if err := topic.ValidateName(*name); err != nil {
		return err
	}
	b, err := openBroker(e, *dir, true)
	if err != nil {
		return err
	}
	defer closeBroker(b, &err)
	in, err := b.CreateTopic(*name, cfg)
	if errors.Is(err, folio.ErrTopicExists) {
		return fmt.Errorf("topic %q %w in %s", *name, ErrTopicExists, *dir)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "Created topic %s with %s.\n", in.Name, plural(int(in.Config.Partitions), "partition"))
	return nil
}

// plural is "1 partition", "3 partitions".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

func topicsDelete(e env, args []string) (err error) {
	fs, dir := newFlags(e, "topics delete", "topics delete -topic T")
	name := fs.String("topic", "", "the topic to delete (required)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *name == "" {
		return usagef("-topic is required")
	}
	if err := checkTopicName(*name); err != nil {
		return err
	}
	b, err := openBroker(e, *dir, false)
	if err != nil {
		return err
	}
	defer closeBroker(b, &err)
	if err := b.DeleteTopic(*name); err != nil {
		if errors.Is(err, folio.ErrUnknownTopic) {
			return unknownTopic(*name, *dir)
		}
		return err
	}
	fmt.Fprintf(e.stdout, "Deleted topic %s.\n", *name)
	return nil
}

func topicsList(e env, args []string) error {
	fs, dir := newFlags(e, "topics list", "topics list")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	d, err := openDataDir(*dir)
	if err != nil {
		return err
	}
	for _, in := range d.topics {
		fmt.Fprintln(e.stdout, in.Name)
	}
	return nil
}

func topicsDescribe(e env, args []string) error {
	fs, dir := newFlags(e, "topics describe", "topics describe [-topic T]")
	name := fs.String("topic", "", "the topic to describe (default: every topic)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	d, err := openDataDir(*dir)
	if err != nil {
		return err
	}
	infos := d.topics
	if *name != "" {
		in, err := d.topic(*name)
		if err != nil {
			return err
		}
		infos = []topic.Info{in}
	}
	for _, in := range infos {
		var cfg []string
		for _, s := range in.Config.Settings() {
			cfg = append(cfg, s.Key+"="+s.Value)
		}
		fmt.Fprintf(e.stdout, "Topic: %s\tTopicId: %s\tPartitionCount: %d\tInternal: %t\tCreated: %s\n",
			in.Name, in.ID, in.Config.Partitions, in.Internal, in.Created.UTC().Format("2006-01-02T15:04:05.000Z"))
		fmt.Fprintf(e.stdout, "\tConfigs: %s\n", strings.Join(cfg, ","))
		for p := int32(0); p < in.Config.Partitions; p++ {
			pb, err := d.partView(in, p).bounds()
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "\tPartition: %d\tStartOffset: %d\tEndOffset: %d\tSegments: %d\tSize: %d\n",
				p, pb.Start, pb.End, pb.Segments, pb.Bytes)
		}
	}
	return nil
}
