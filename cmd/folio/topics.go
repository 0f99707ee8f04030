package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/foliolog/folio"
	"github.com/foliolog/folio/topic"
)

func runTopics(e env, args []string) error {
	if len(args) == 0 {
		return usagef("topics needs a subcommand: create, delete, list or describe")
	}
	switch args[0] {
	case "create":
		return topicsCreate(e, args[1:])
	case "delete":
		return topicsDelete(e, args[1:])
	case "list":
		return topicsList(e, args[1:])
	case "describe":
		return topicsDescribe(e, args[1:])
	}
	return usagef("unknown topics subcommand %q (create, delete, list or describe)", args[0])
}

// configFlag sets one topic setting through topic.Config.Set, so the
// command line takes exactly the syntax the catalog stores ("7d",
// "512MiB", "interval:100ms").
type configFlag struct {
	cfg *topic.Config
	key string // "" for -config key=value
}

func (f configFlag) String() string { return "" }

func (f configFlag) Set(v string) error {
	key := f.key
	if key == "" {
		k, val, ok := strings.Cut(v, "=")
		if !ok {
			return fmt.Errorf("want key=value, got %q", v)
		}
		key, v = strings.TrimSpace(k), strings.TrimSpace(val)
		if key == topic.KeyPartitions {
			return fmt.Errorf("use -partitions for the partition count")
		}
	}
	return f.cfg.Set(key, v)
}

func topicsCreate(e env, args []string) (err error) {
	fs, dir := newFlags(e, "topics create", "topics create -topic T [-partitions N] [-<setting> value ...] [-config key=value ...]")
	name := fs.String("topic", "", "the topic to create (required)")
	parts := fs.Int("partitions", 1, "the number of partitions")
	var cfg topic.Config
	fs.Var(configFlag{cfg: &cfg}, "config", "a topic setting as key=value (repeatable); keys: "+strings.Join(topic.Keys[1:], ", "))
	for _, k := range topic.Keys {
		if k == topic.KeyPartitions {
			continue
		}
		fs.Var(configFlag{cfg: &cfg, key: k}, k, "topic setting "+k+" (see -config)")
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *name == "" {
		return usagef("-topic is required")
	}
	if *parts < 1 || *parts > 1<<20 {
		return usagef("-partitions %d: want at least 1", *parts)
	}
	cfg.Partitions = int32(*parts)
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("%w: %v", ErrUsage, err)
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
	if err != nil {
		return err
	}
	plural := "s"
	if in.Config.Partitions == 1 {
		plural = ""
	}
	fmt.Fprintf(e.stdout, "Created topic %s with %d partition%s.\n", in.Name, in.Config.Partitions, plural)
	return nil
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
			return fmt.Errorf("%w %q in %s", ErrUnknownTopic, *name, *dir)
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
