package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/foliolog/folio"
	"github.com/foliolog/folio/group"
	"github.com/foliolog/folio/record"
	"github.com/foliolog/folio/topic"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrUnknownGroup names a group with no committed offsets.
var ErrUnknownGroup = errors.New("unknown consumer group")

// commit is one committed offset as __consumer_offsets holds it.
type commit struct {
	offset   int64
	metadata string
	at       time.Time
}

type groupTP struct {
	group     string
	topic     string
	partition int32
}

// groupMeta is a group's membership as its latest group metadata record
// holds it.
type groupMeta struct {
	protocolType, protocol, leader string
	generation                     int32
	since                          time.Time
	members                        []memberMeta
	// topics are those the members subscribed to or were assigned, for a
	// consumer group: their partitions without a commit still have a lag.
	topics []string
}

// memberMeta is one member of a groupMeta.
type memberMeta struct {
	id, instance, client, host string
	// assigned is the member's assignment, decoded for a consumer group.
	assigned string
}

// state is the group's state as the record tells it: the coordinator
// writes a record when a generation completes (Stable, with members) and
// when the group becomes Empty (without).
func (g *groupMeta) state() string {
	if len(g.members) == 0 {
		return group.StateEmpty.String()
	}
	return group.StateStable.String()
}

// readCommits reads every committed offset and every group's latest
// membership from the files of __consumer_offsets, as the coordinator
// loads them: the records are Kafka's (OffsetCommitKey and
// OffsetCommitValue, GroupMetadataKey and GroupMetadataValue, decoded with
// franz-go's kmsg), the last one of a key wins, and a tombstone deletes
// it. Records of other kinds (KIP-848 records) are skipped. A directory
// without the topic has no commits and no groups.
func readCommits(d *dataDir) (map[groupTP]commit, map[string]*groupMeta, error) {
	out := map[groupTP]commit{}
	metas := map[string]*groupMeta{}
	in, err := d.topic(group.OffsetsTopic)
	if errors.Is(err, ErrUnknownTopic) {
		return out, metas, nil
	}
	if err != nil {
		return nil, nil, err
	}
	for p := int32(0); p < in.Config.Partitions; p++ {
		pv := d.partView(in, p)
		pb, err := pv.bounds()
		if err != nil {
			return nil, nil, err
		}
		pr := &partReader{pv: pv}
		if err := pr.positionAt(pb.Start); err != nil {
			return nil, nil, err
		}
		for !pr.atEnd {
			err := pr.poll(pollBytes, func(b record.Batch, from int64) (int64, bool, error) {
				it := b.Records(&record.DecodeOptions{SkipCRC: true})
				defer it.Close()
				for it.Next() {
					r := it.Record()
					if r.Offset() < from {
						continue
					}
					if err := applyCommitRecord(out, r.Key(), r.Value(), r.ValueIsNull(), r.Timestamp()); err != nil {
						return from, true, fmt.Errorf("offset %d: %w", r.Offset(), err)
					}
					if err := applyGroupRecord(metas, r.Key(), r.Value(), r.ValueIsNull()); err != nil {
						return from, true, fmt.Errorf("offset %d: %w", r.Offset(), err)
					}
				}
				return b.LastOffset() + 1, false, it.Err()
			})
			if err != nil {
				pr.close()
				return nil, nil, err
			}
		}
		pr.close()
	}
	return out, metas, nil
}

// groupKeyVersion is the key version of Kafka's group metadata records.
const groupKeyVersion = 2

// applyGroupRecord applies one record of __consumer_offsets to the
// groups' memberships: a group metadata record replaces the group's, a
// tombstone (the group was deleted) removes it; other records are left.
func applyGroupRecord(metas map[string]*groupMeta, key, value []byte, null bool) error {
	if len(key) < 2 {
		return fmt.Errorf("%w: a key of %d bytes", ErrCorrupt, len(key))
	}
	if v := int16(binary.BigEndian.Uint16(key)); v != groupKeyVersion {
		return nil // not group metadata
	}
	var k kmsg.GroupMetadataKey
	if err := k.ReadFrom(key); err != nil {
		return fmt.Errorf("%w: group metadata key: %v", ErrCorrupt, err)
	}
	if null {
		delete(metas, k.Group)
		return nil
	}
	if len(value) < 2 {
		return fmt.Errorf("%w: group metadata value of %d bytes", ErrCorrupt, len(value))
	}
	// Versions 0 to 4 are Kafka's; a later one may lay its fields out
	// differently, and would be misread.
	if v := int16(binary.BigEndian.Uint16(value)); v < 0 || v > 4 {
		return fmt.Errorf("%w: group metadata value version %d", ErrCorrupt, v)
	}
	var v kmsg.GroupMetadataValue
	if err := v.ReadFrom(value); err != nil {
		return fmt.Errorf("%w: group metadata value: %v", ErrCorrupt, err)
	}
	g := &groupMeta{protocolType: v.ProtocolType, generation: v.Generation, since: time.UnixMilli(v.CurrentStateTimestamp)}
	if v.Protocol != nil {
		g.protocol = *v.Protocol
	}
	if v.Leader != nil {
		g.leader = *v.Leader
	}
	topics := map[string]bool{}
	for _, m := range v.Members {
		for _, t := range memberTopics(v.ProtocolType, m.Subscription, m.Assignment) {
			topics[t] = true
		}
		mm := memberMeta{id: m.MemberID, client: m.ClientID, host: m.ClientHost, assigned: describeAssignment(v.ProtocolType, m.Assignment)}
		if m.InstanceID != nil {
			mm.instance = *m.InstanceID
		}
		g.members = append(g.members, mm)
	}
	g.topics = slices.Sorted(maps.Keys(topics))
	metas[k.Group] = g
	return nil
}

// memberTopics returns the topics a consumer group member subscribed to
// and was assigned, as far as they decode; other protocols have none.
func memberTopics(protocolType string, subscription, assignment []byte) []string {
	if protocolType != group.ProtocolTypeConsumer {
		return nil
	}
	var out []string
	var sub kmsg.ConsumerMemberMetadata
	if err := sub.ReadFrom(subscription); err == nil {
		out = append(out, sub.Topics...)
	}
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(assignment); err == nil {
		for _, t := range a.Topics {
			out = append(out, t.Topic)
		}
	}
	return out
}

// describeAssignment renders a member's assignment: for a consumer group
// the partitions of the consumer protocol's assignment, topic-partition
// in order; otherwise (or when it does not decode) its size.
func describeAssignment(protocolType string, b []byte) string {
	if protocolType != group.ProtocolTypeConsumer {
		return fmt.Sprintf("(%d bytes of protocol type %q)", len(b), protocolType)
	}
	if len(b) == 0 {
		return "(none)"
	}
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(b); err != nil {
		return fmt.Sprintf("(%d bytes that do not decode)", len(b))
	}
	var parts []string
	sort.Slice(a.Topics, func(i, j int) bool { return a.Topics[i].Topic < a.Topics[j].Topic })
	for _, t := range a.Topics {
		ps := slices.Clone(t.Partitions)
		slices.Sort(ps)
		for _, p := range ps {
			parts = append(parts, t.Topic+"-"+strconv.Itoa(int(p)))
		}
	}
	if len(parts) == 0 {
		return "(none)"
	}
	return strings.Join(parts, ",")
}

// applyCommitRecord applies one record of __consumer_offsets to commits.
func applyCommitRecord(commits map[groupTP]commit, key, value []byte, null bool, ts int64) error {
	if len(key) < 2 {
		return fmt.Errorf("%w: a key of %d bytes", ErrCorrupt, len(key))
	}
	if v := int16(binary.BigEndian.Uint16(key)); v != 0 && v != 1 {
		return nil // not an offset commit
	}
	var k kmsg.OffsetCommitKey
	if err := k.ReadFrom(key); err != nil {
		return fmt.Errorf("%w: offset commit key: %v", ErrCorrupt, err)
	}
	gtp := groupTP{k.Group, k.Topic, k.Partition}
	if null {
		delete(commits, gtp)
		return nil
	}
	var v kmsg.OffsetCommitValue
	if err := v.ReadFrom(value); err != nil {
		return fmt.Errorf("%w: offset commit value: %v", ErrCorrupt, err)
	}
	at := time.UnixMilli(v.CommitTimestamp)
	if v.CommitTimestamp <= 0 {
		at = time.UnixMilli(ts)
	}
	commits[gtp] = commit{offset: v.Offset, metadata: v.Metadata, at: at}
	return nil
}

func groupsDescribe(e env, args []string) error {
	fs, dir := newFlags(e, "groups", "groups [-group G]    (and: folio groups reset -h)")
	only := fs.String("group", "", "describe only this group")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	d, err := openDataDir(*dir)
	if err != nil {
		return err
	}
	commits, metas, err := readCommits(d)
	if err != nil {
		return err
	}
	names := map[string]bool{}
	for k := range commits {
		if *only == "" || k.group == *only {
			names[k.group] = true
		}
	}
	for id := range metas {
		if *only == "" || id == *only {
			names[id] = true
		}
	}
	if *only != "" && len(names) == 0 {
		return fmt.Errorf("%w %q in %s: it has no committed offsets and no members", ErrUnknownGroup, *only, *dir)
	}
	keys, err := groupPartitions(d, names, commits, metas)
	if err != nil {
		return err
	}
	bounds := map[groupTP]partBounds{} // by topic and partition (group "")
	partBoundsOf := func(topicName string, p int32) (partBounds, bool, error) {
		k := groupTP{"", topicName, p}
		if pb, ok := bounds[k]; ok {
			return pb, pb.End >= 0, nil
		}
		in, err := d.topic(topicName)
		if errors.Is(err, ErrUnknownTopic) || (err == nil && p >= in.Config.Partitions) {
			bounds[k] = partBounds{End: -1}
			return partBounds{}, false, nil
		}
		if err != nil {
			return partBounds{}, false, err
		}
		pb, err := d.partView(in, p).bounds()
		if err != nil {
			return partBounds{}, false, err
		}
		bounds[k] = pb
		return pb, true, nil
	}
	w := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	if len(keys) > 0 {
		fmt.Fprintln(w, "GROUP\tTOPIC\tPARTITION\tCOMMITTED\tLOG-END\tLAG\tCOMMITTED-AT\tMETADATA")
	}
	for _, k := range keys {
		pb, exists, err := partBoundsOf(k.topic, k.partition)
		if err != nil {
			return err
		}
		c, committed := commits[k]
		if !committed {
			// A partition of the group's topics that it never committed:
			// a member starting now reads it from the log start (the
			// default reset), so all of it is backlog.
			fmt.Fprintf(w, "%s\t%s\t%d\t-\t%d\t%d (no commit: from the log start, %d)\t-\t-\n",
				printable([]byte(k.group)), k.topic, k.partition, pb.End, pb.End-pb.Start, pb.Start)
			continue
		}
		logEnd, lag := "-", "-"
		switch {
		case !exists:
			lag = "(topic deleted)"
		case c.offset > pb.End:
			// Records lost in a power cut under a non-sync policy: the
			// coordinator clamps such an offset to the log end when it loads.
			logEnd, lag = strconv.FormatInt(pb.End, 10), "0 (committed beyond the log end)"
		default:
			logEnd, lag = strconv.FormatInt(pb.End, 10), strconv.FormatInt(pb.End-c.offset, 10)
		}
		fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\n", printable([]byte(k.group)), k.topic, k.partition, c.offset, logEnd, lag,
			c.at.UTC().Format("2006-01-02T15:04:05.000Z"), orDash(printable([]byte(c.metadata)), c.metadata == ""))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return printMembership(e, names, metas, len(keys) > 0)
}

// groupPartitions returns the partitions to show for the groups named,
// sorted: every committed one, and every other partition of a topic the
// group committed in or its members subscribed to, so that partitions the
// group never committed show their backlog instead of hiding it.
func groupPartitions(d *dataDir, names map[string]bool, commits map[groupTP]commit, metas map[string]*groupMeta) ([]groupTP, error) {
	seen := map[groupTP]bool{}
	topicsOf := map[string]map[string]bool{}
	addTopic := func(g, t string) {
		if topicsOf[g] == nil {
			topicsOf[g] = map[string]bool{}
		}
		topicsOf[g][t] = true
	}
	for k := range commits {
		if names[k.group] {
			seen[k] = true
			addTopic(k.group, k.topic)
		}
	}
	for id, g := range metas {
		if names[id] {
			for _, t := range g.topics {
				addTopic(id, t)
			}
		}
	}
	for g, ts := range topicsOf {
		for t := range ts {
			in, err := d.topic(t)
			if errors.Is(err, ErrUnknownTopic) || errors.Is(err, topic.ErrInvalidName) || errors.Is(err, topic.ErrReservedName) {
				continue // deleted since, or a name from a damaged record: its commits show it
			}
			if err != nil {
				return nil, err
			}
			for p := range in.Config.Partitions {
				seen[groupTP{g, t, p}] = true
			}
		}
	}
	keys := slices.Collect(maps.Keys(seen))
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.group != b.group {
			return a.group < b.group
		}
		if a.topic != b.topic {
			return a.topic < b.topic
		}
		return a.partition < b.partition
	})
	return keys, nil
}

// printMembership prints the state of each group named, then each member
// with its assigned partitions, after a blank line where blankFirst. A group without a metadata record (its
// offsets were committed without a member, or by a version that wrote
// none) is Empty, its generation unknown.
func printMembership(e env, names map[string]bool, metas map[string]*groupMeta, blankFirst bool) error {
	if len(names) == 0 {
		return nil
	}
	ids := slices.Sorted(maps.Keys(names))
	w := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	if blankFirst {
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "GROUP\tSTATE\tGENERATION\tPROTOCOL\tLEADER\tMEMBERS\tSINCE")
	var members int
	for _, id := range ids {
		g := metas[id]
		if g == nil {
			fmt.Fprintf(w, "%s\t%s\t-\t-\t-\t0\t-\n", printable([]byte(id)), group.StateEmpty)
			continue
		}
		members += len(g.members)
		fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\t%d\t%s\n", printable([]byte(id)), g.state(), g.generation,
			orDash(g.protocolType+"/"+g.protocol, g.protocol == ""), orDash(printable([]byte(g.leader)), g.leader == ""),
			len(g.members), g.since.UTC().Format("2006-01-02T15:04:05.000Z"))
	}
	if members > 0 {
		fmt.Fprintln(w, "\nGROUP\tMEMBER\tINSTANCE\tCLIENT\tHOST\tASSIGNED")
		for _, id := range ids {
			g := metas[id]
			if g == nil {
				continue
			}
			for _, m := range g.members {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", printable([]byte(id)), printable([]byte(m.id)),
					orDash(printable([]byte(m.instance)), m.instance == ""), orDash(printable([]byte(m.client)), m.client == ""),
					orDash(printable([]byte(m.host)), m.host == ""), m.assigned)
			}
		}
	}
	return w.Flush()
}

// orDash is s, or "-" where empty is true: a column never empty keeps the
// output splittable on whitespace.
func orDash(s string, empty bool) string {
	if empty {
		return "-"
	}
	return s
}

// resetTarget is where -to moves a partition.
type resetTarget struct {
	kind   byte // 'e' earliest, 'l' latest, 'o' offset, 't' time
	offset int64
	at     time.Time
}

func parseResetTarget(s string) (resetTarget, error) {
	switch s {
	case "earliest", "beginning":
		return resetTarget{kind: 'e'}, nil
	case "latest", "end":
		return resetTarget{kind: 'l'}, nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && n >= 0 {
		return resetTarget{kind: 'o', offset: n}, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return resetTarget{kind: 't', at: t}, nil
		}
	}
	return resetTarget{}, usagef("-to %q: want earliest, latest, an offset, or a time (2006-01-02T15:04:05Z, RFC 3339; without a zone, UTC)", s)
}

func groupsReset(e env, args []string) (err error) {
	fs, dir := newFlags(e, "groups reset", "groups reset -group G -topic T -to earliest|latest|OFFSET|TIME [-partition P] [-dry-run]")
	groupID := fs.String("group", "", "the group whose offsets to move (required; it must have no members)")
	name := fs.String("topic", "", "the topic (required)")
	part := fs.Int("partition", -1, "the partition; -1 moves every partition of the topic")
	to := fs.String("to", "", "earliest, latest, an offset, or a time: the first offset at or after it (required)")
	dry := fs.Bool("dry-run", false, "print the new offsets without committing them")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case *groupID == "":
		return usagef("-group is required")
	case *name == "":
		return usagef("-topic is required")
	case *to == "":
		return usagef("-to is required")
	}
	if err := checkPartitionFlag(*part); err != nil {
		return err
	}
	target, err := parseResetTarget(*to)
	if err != nil {
		return err
	}
	if err := checkTopicName(*name); err != nil {
		return err
	}
	b, err := openBroker(e, *dir, false)
	if err != nil {
		return err
	}
	defer closeBroker(b, &err)
	in, err := b.DescribeTopic(*name)
	if errors.Is(err, folio.ErrUnknownTopic) {
		return unknownTopic(*name, *dir)
	}
	if err != nil {
		return err
	}
	if *part >= len(in.Partitions) {
		return fmt.Errorf("%w %d: topic %q has partitions 0 to %d", ErrUnknownPartition, *part, in.Name, len(in.Partitions)-1)
	}
	coord, err := b.GroupCoordinator()
	if err != nil {
		return err
	}
	ctx := e.ctx
	desc, err := coord.DescribeGroups(ctx, []string{*groupID})
	if err != nil {
		return err
	}
	if len(desc) == 1 && desc[0].State != group.StateEmpty && desc[0].State != group.StateDead {
		return fmt.Errorf("group %q is %s with %d members: offsets can only be reset while it has none", *groupID, desc[0].State, len(desc[0].Members))
	}
	var parts []int32
	for _, p := range in.Partitions {
		if *part < 0 || p.Partition == int32(*part) {
			parts = append(parts, p.Partition)
		}
	}
	old, err := coord.OffsetFetch(ctx, &group.OffsetFetchRequest{Group: *groupID, Topics: []group.OffsetFetchTopic{{Topic: in.Name, Partitions: parts}}})
	if err != nil {
		return err
	}
	current := map[int32]int64{}
	for _, t := range old.Topics {
		for _, p := range t.Partitions {
			current[p.Partition] = p.Offset
		}
	}
	req := &group.OffsetCommitRequest{Group: *groupID, GenerationID: -1, Topics: []group.OffsetCommitTopic{{Topic: in.Name}}}
	w := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "GROUP\tTOPIC\tPARTITION\tOLD\tNEW")
	for _, pi := range in.Partitions {
		if *part >= 0 && pi.Partition != int32(*part) {
			continue
		}
		next, err := resolveReset(b, in.Name, pi, target)
		if err != nil {
			return err
		}
		req.Topics[0].Partitions = append(req.Topics[0].Partitions, group.OffsetCommitPartition{Partition: pi.Partition, Offset: next, LeaderEpoch: -1})
		was := "-"
		if o, ok := current[pi.Partition]; ok && o >= 0 {
			was = strconv.FormatInt(o, 10)
		}
		fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%d\n", *groupID, in.Name, pi.Partition, was, next)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if *dry {
		// The table is what a reset would print: say it was not one.
		_, err := fmt.Fprintln(e.stdout, "Dry run: nothing was committed; run without -dry-run to commit these offsets.")
		return err
	}
	resp, err := coord.OffsetCommit(ctx, req)
	if err != nil {
		return err
	}
	return resp.Err()
}

// resolveReset returns the offset target names in a partition.
func resolveReset(b *folio.Broker, topicName string, p folio.PartitionInfo, target resetTarget) (int64, error) {
	switch target.kind {
	case 'e':
		return p.LogStartOffset, nil
	case 'l':
		return p.HighWatermark, nil
	case 'o':
		if target.offset < p.LogStartOffset || target.offset > p.HighWatermark {
			return 0, fmt.Errorf("%s-%d: offset %d is outside the partition's offsets %d to %d", topicName, p.Partition, target.offset, p.LogStartOffset, p.HighWatermark)
		}
		return target.offset, nil
	}
	off, ok, err := b.OffsetForTime(topicName, p.Partition, target.at)
	if err != nil {
		return 0, err
	}
	if !ok {
		return p.HighWatermark, nil // nothing at or after the time: from the end
	}
	return off, nil
}

// consumeGroup consumes as a member of a consumer group: the Broker's
// coordinator assigns the member partitions, and the offsets after the
// records printed are committed every commitEvery and before it exits,
// always after the output was flushed, so a commit never covers a record
// that was not written out (at-least-once).
func consumeGroup(e env, dir, groupID, topicName string, start startSpec, f recordFormat, limit int64, exitAtEnd bool, recheck, commitEvery time.Duration) (err error) {
	reset := folio.ResetEarliest
	switch start.kind {
	case 'b':
	case 'e':
		reset = folio.ResetLatest
	default:
		return usagef("-offset with -group is beginning or end (where to start in partitions without a committed offset)")
	}
	if err := checkTopicName(topicName); err != nil {
		return err
	}
	b, err := openBroker(e, dir, false)
	if err != nil {
		return err
	}
	defer closeBroker(b, &err)
	in, err := b.DescribeTopic(topicName)
	if errors.Is(err, folio.ErrUnknownTopic) {
		return unknownTopic(topicName, dir)
	}
	if err != nil {
		return err
	}
	gc, err := b.JoinGroup(e.ctx, groupID, []string{in.Name}, &folio.GroupOptions{Reset: reset, DisableAutoCommit: true})
	if err != nil {
		if e.ctx.Err() != nil {
			return nil // interrupted while joining: nothing printed, nothing to commit
		}
		return err
	}
	m := &groupPrinter{
		printer:   printer{w: bufio.NewWriterSize(e.stdout, 64<<10), format: f, topic: in.Name, limit: limit},
		gc:        gc,
		positions: map[folio.TopicPartition]int64{},
	}
	loopErr := m.loop(e.ctx, exitAtEnd, recheck, commitEvery)
	// Commit what was printed, with a context of its own: the command's
	// may have ended (SIGINT), and the commit must still happen.
	cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	commitErr := m.commit(cctx)
	closeErr := gc.Close()
	return errors.Join(loopErr, commitErr, closeErr)
}

// groupPrinter prints a group member's records and tracks what to commit.
type groupPrinter struct {
	printer
	gc *folio.GroupConsumer
	// positions holds, per partition, the offset after the last record
	// printed (or, if none was, the first record handed out and not
	// printed); committed is what was last committed of it.
	positions, committed map[folio.TopicPartition]int64
}

func (m *groupPrinter) loop(ctx context.Context, exitAtEnd bool, recheck, commitEvery time.Duration) error {
	lastCommit := time.Now()
	for !m.done() {
		pctx, cancel := context.WithTimeout(ctx, recheck)
		recs, err := m.gc.Poll(pctx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil // interrupted: what was printed is committed on the way out
		case errors.Is(err, context.DeadlineExceeded):
			// Nothing arrived within recheck: at the end of what is written.
			if exitAtEnd && m.caughtUp() {
				return nil
			}
			if err := m.w.Flush(); err != nil {
				return fmt.Errorf("writing the output: %w", err)
			}
		case err != nil:
			return err
		}
		for _, r := range recs {
			tp := folio.TopicPartition{Topic: r.Topic, Partition: r.Partition}
			if m.done() {
				// Handed out past -n, not printed: the commit of a
				// partition nothing was printed from stays before it.
				if _, ok := m.positions[tp]; !ok {
					m.positions[tp] = r.Offset
				}
				continue
			}
			fl := fields{topic: r.Topic, partition: r.Partition, offset: r.Offset, timestamp: r.Timestamp.UnixMilli(),
				key: r.Key, value: r.Value, headers: r.Headers}
			m.format.write(m.w, &fl)
			m.printed++
			m.positions[tp] = r.Offset + 1
		}
		if time.Since(lastCommit) >= commitEvery {
			if err := m.commit(ctx); err != nil {
				return err
			}
			lastCommit = time.Now()
		}
	}
	return nil
}

// caughtUp reports whether the member has read everything written to the
// partitions it owns.
func (m *groupPrinter) caughtUp() bool {
	for _, tp := range m.gc.Assignment() {
		if lag, err := m.gc.Lag(tp.Topic, tp.Partition); err != nil || lag > 0 {
			return false
		}
	}
	return true
}

// commit flushes the output, then commits the positions after the records
// in it that are not committed yet, and the position of every owned
// partition nothing was printed from (where the member started: a member
// that started at the end and read nothing must start there next time
// too, not at the end again, or it misses what came in between; the
// library's auto-commit does the same).
func (m *groupPrinter) commit(ctx context.Context) error {
	if err := m.w.Flush(); err != nil {
		return fmt.Errorf("writing the output: %w", err)
	}
	if m.committed == nil {
		m.committed = map[folio.TopicPartition]int64{}
	}
	todo := map[folio.TopicPartition]int64{}
	for tp, off := range m.positions {
		if c, ok := m.committed[tp]; !ok || c != off {
			todo[tp] = off
		}
	}
	for _, tp := range m.gc.Assignment() {
		if _, printed := m.positions[tp]; printed {
			continue
		}
		if off, err := m.gc.Position(tp.Topic, tp.Partition); err == nil {
			if c, ok := m.committed[tp]; !ok || c != off {
				todo[tp] = off
			}
		}
	}
	if len(todo) == 0 {
		return nil
	}
	if err := m.gc.CommitOffsets(ctx, todo); err != nil {
		return fmt.Errorf("committing offsets of group %q: %w", m.gc.Group(), err)
	}
	for tp, off := range todo {
		m.committed[tp] = off
	}
	return nil
}
