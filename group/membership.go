package group

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"
)

// group is one consumer group: its classic-protocol state and its
// committed offsets.
type group struct {
	c         *Coordinator
	id        string
	partition int32 // of the offsets topic

	// fenceMu orders offset commits against the events that fence members:
	// a commit holds it shared from the check of its member and generation
	// until its record is durable and applied; removing a member, starting
	// a generation and deleting the group hold it exclusively. So a commit
	// that passed the check is never written after its member was fenced,
	// and a zombie's commit cannot land after its successor's.
	fenceMu sync.RWMutex

	// mu guards every field below.
	mu           sync.Mutex
	state        State
	stateSince   time.Time
	generation   int32
	protocolType string
	protocol     string
	leader       string
	members      map[string]*member
	order        []string          // member ids in the order they joined
	static       map[string]string // instance id -> member id
	pending      map[string]*time.Timer
	pendingSync  map[string]bool
	// rebalanceSeq numbers rebalances, so a timer of an earlier one
	// does nothing.
	rebalanceSeq   int64
	joinTimer      *time.Timer
	syncTimer      *time.Timer
	initialDelay   bool          // the join waits out InitialRebalanceDelay
	delayRemaining time.Duration // of the rebalance timeout, after the delays
	newMemberAdded bool
	watchCh        chan struct{}
	closed         bool  // the coordinator closed, or unloaded the group's partition
	closeErr       error // what calls get once closed
	offsets        map[TopicPartition]*committedOffset
}

// member is one member as the coordinator knows it.
type member struct {
	id, instanceID       string
	clientID, clientHost string
	session, rebalance   time.Duration
	protocolType         string
	protocols            []JoinGroupProtocol
	assignment           []byte
	// joinCh and syncCh are set while the member waits for its JoinGroup
	// or SyncGroup response; each gets exactly one outcome.
	joinCh        chan joinOutcome
	syncCh        chan syncOutcome
	lastHeartbeat time.Time
	hbTimer       *time.Timer
}

type joinOutcome struct {
	resp *JoinGroupResponse
	err  error
}

type syncOutcome struct {
	resp *SyncGroupResponse
	err  error
}

func newGroup(c *Coordinator, id string) *group {
	return &group{
		c: c, id: id, partition: PartitionFor(id, c.store.Partitions()),
		state: StateEmpty, stateSince: time.Now(),
		members: map[string]*member{}, static: map[string]string{},
		pending: map[string]*time.Timer{}, pendingSync: map[string]bool{},
		offsets: map[TopicPartition]*committedOffset{},
	}
}

func (m *member) metadataFor(protocol string) []byte {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

// matches reports whether a rejoin brings the same protocols and metadata.
func (m *member) matches(protocols []JoinGroupProtocol) bool {
	return slices.EqualFunc(m.protocols, protocols, func(a, b JoinGroupProtocol) bool {
		return a.Name == b.Name && string(a.Metadata) == string(b.Metadata)
	})
}

func (m *member) respondJoin(resp *JoinGroupResponse, err error) {
	if m.joinCh != nil {
		m.joinCh <- joinOutcome{resp, err}
		m.joinCh = nil
	}
}

func (m *member) respondSync(resp *SyncGroupResponse, err error) {
	if m.syncCh != nil {
		m.syncCh <- syncOutcome{resp, err}
		m.syncCh = nil
	}
}

// transitionLocked moves the group to a state and wakes its watchers.
func (g *group) transitionLocked(s State) {
	g.state = s
	g.stateSince = time.Now()
	g.notifyLocked()
}

// notifyLocked wakes the in-process members watching the group.
func (g *group) notifyLocked() {
	if g.watchCh != nil {
		close(g.watchCh)
		g.watchCh = nil
	}
}

// validateMemberLocked checks a member id, and for a static member its
// instance id, as Kafka's ClassicGroup.validateMember does.
func (g *group) validateMemberLocked(memberID, instanceID string) (*member, error) {
	if instanceID != "" {
		id, ok := g.static[instanceID]
		if !ok {
			return nil, fmt.Errorf("group %q: static member %q: %w", g.id, instanceID, ErrUnknownMemberID)
		}
		if id != memberID {
			return nil, fmt.Errorf("group %q: static member %q is now %q, not %q: %w", g.id, instanceID, id, memberID, ErrFencedInstanceID)
		}
	}
	m := g.members[memberID]
	if m == nil {
		return nil, fmt.Errorf("group %q: member %q: %w", g.id, memberID, ErrUnknownMemberID)
	}
	return m, nil
}

// supportsProtocolsLocked reports whether a member with these protocols
// can join: the first member sets the protocol type; later ones must
// share it and support at least one protocol every member supports.
func (g *group) supportsProtocolsLocked(protocolType string, protocols []JoinGroupProtocol, except string) bool {
	if protocolType == "" || len(protocols) == 0 {
		return false
	}
	others := 0
	for id := range g.members {
		if id != except {
			others++
		}
	}
	if others == 0 {
		return true
	}
	if protocolType != g.protocolType {
		return false
	}
	for _, p := range protocols {
		all := true
		for id, m := range g.members {
			if id != except && !m.hasProtocol(p.Name) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

func (m *member) hasProtocol(name string) bool {
	for _, p := range m.protocols {
		if p.Name == name {
			return true
		}
	}
	return false
}

// selectProtocolLocked picks the group's protocol as Kafka does: among the
// protocols every member supports, each member votes for the first of its
// own list; the most votes win (ties to the lowest name).
func (g *group) selectProtocolLocked() string {
	votes := map[string]int{}
	for _, m := range g.members {
		for _, p := range m.protocols {
			if g.allSupportLocked(p.Name) {
				votes[p.Name]++
				break
			}
		}
	}
	best, n := "", -1
	for name, v := range votes {
		if v > n || v == n && name < best {
			best, n = name, v
		}
	}
	return best
}

func (g *group) allSupportLocked(name string) bool {
	for _, m := range g.members {
		if !m.hasProtocol(name) {
			return false
		}
	}
	return true
}

// rebalanceTimeoutLocked is the largest rebalance timeout of the members.
func (g *group) rebalanceTimeoutLocked() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalance)
	}
	return d
}

// JoinGroup joins a member to a group, or rejoins it, and waits until the
// group completes the join phase (every member rejoined or the rebalance
// timeout passed), then returns the new generation; the leader gets every
// member's metadata. A dynamic member's first join with
// RequireKnownMemberID returns ErrMemberIDRequired together with a response
// holding its member id, to join with. If ctx ends first, JoinGroup returns
// ctx's error and the member stays in the join as Kafka keeps a member
// whose client disconnected: a retry with the same member id picks up the
// generation.
func (c *Coordinator) JoinGroup(ctx context.Context, req *JoinGroupRequest) (*JoinGroupResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if req.Group == "" {
		return nil, fmt.Errorf("join: %w", ErrInvalidGroupID)
	}
	if req.SessionTimeout < c.opts.MinSessionTimeout || req.SessionTimeout > c.opts.MaxSessionTimeout {
		return nil, fmt.Errorf("group %q: session timeout %v outside [%v, %v]: %w", req.Group,
			req.SessionTimeout, c.opts.MinSessionTimeout, c.opts.MaxSessionTimeout, ErrInvalidSessionTimeout)
	}
	var (
		g   *group
		err error
	)
	if req.MemberID == "" {
		g, err = c.getOrCreate(req.Group)
	} else {
		g, err = c.lookup(req.Group)
		if err == nil && g == nil {
			err = fmt.Errorf("group %q: member %q: %w", req.Group, req.MemberID, ErrUnknownMemberID)
		}
	}
	if err != nil {
		return nil, err
	}
	g.fenceMu.Lock()
	g.mu.Lock()
	ch, resp, err := g.joinLocked(req)
	g.mu.Unlock()
	g.fenceMu.Unlock()
	if ch == nil {
		return resp, err
	}
	select {
	case o := <-ch:
		return o.resp, o.err
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// joinLocked handles a JoinGroup under the group's locks. It returns the
// channel to wait on, or a response (or error) to return at once.
func (g *group) joinLocked(req *JoinGroupRequest) (chan joinOutcome, *JoinGroupResponse, error) {
	if g.closed {
		return nil, nil, g.closeErr
	}
	if g.state == StateDead {
		return nil, nil, fmt.Errorf("group %q is being deleted: %w", g.id, ErrCoordinatorNotAvailable)
	}
	rebalance := req.RebalanceTimeout
	if rebalance <= 0 {
		rebalance = req.SessionTimeout
	}
	if req.MemberID == "" {
		if max := g.c.opts.MaxGroupSize; max > 0 && len(g.members) >= max && (req.InstanceID == "" || g.static[req.InstanceID] == "") {
			return nil, nil, fmt.Errorf("group %q has %d members: %w", g.id, len(g.members), ErrGroupMaxSizeReached)
		}
		return g.joinUnknownLocked(req, rebalance)
	}
	if _, ok := g.pending[req.MemberID]; ok {
		if req.InstanceID != "" {
			return nil, nil, fmt.Errorf("group %q: pending member %q cannot be static: %w", g.id, req.MemberID, ErrInvalidRequest)
		}
		if !g.supportsProtocolsLocked(req.ProtocolType, req.Protocols, "") {
			return nil, nil, fmt.Errorf("group %q: member %q: %w", g.id, req.MemberID, ErrInconsistentGroupProtocol)
		}
		g.pending[req.MemberID].Stop()
		delete(g.pending, req.MemberID)
		return g.addMemberLocked(req.MemberID, req, rebalance), nil, nil
	}
	m, err := g.validateMemberLocked(req.MemberID, req.InstanceID)
	if err != nil {
		return nil, nil, err
	}
	if !g.supportsProtocolsLocked(req.ProtocolType, req.Protocols, m.id) {
		return nil, nil, fmt.Errorf("group %q: member %q: %w", g.id, req.MemberID, ErrInconsistentGroupProtocol)
	}
	m.lastHeartbeat = time.Now()
	switch g.state {
	case StatePreparingRebalance:
		return g.updateMemberLocked(m, req, rebalance), nil, nil
	case StateCompletingRebalance:
		if m.matches(req.Protocols) {
			// A retry after a lost response: the current generation.
			return nil, g.joinResponseLocked(m), nil
		}
		return g.updateMemberLocked(m, req, rebalance), nil, nil
	case StateStable:
		if m.id == g.leader || !m.matches(req.Protocols) {
			// The leader rejoins to change the assignment (its view of
			// the topics changed), a member when its subscription did.
			return g.updateMemberLocked(m, req, rebalance), nil, nil
		}
		return nil, g.joinResponseLocked(m), nil
	}
	return nil, nil, fmt.Errorf("group %q is %v: member %q: %w", g.id, g.state, req.MemberID, ErrUnknownMemberID)
}

// joinUnknownLocked handles the join of a member without a member id.
func (g *group) joinUnknownLocked(req *JoinGroupRequest, rebalance time.Duration) (chan joinOutcome, *JoinGroupResponse, error) {
	old, static := "", req.InstanceID != ""
	if static {
		old = g.static[req.InstanceID]
	}
	if !g.supportsProtocolsLocked(req.ProtocolType, req.Protocols, old) {
		return nil, nil, fmt.Errorf("group %q: %w", g.id, ErrInconsistentGroupProtocol)
	}
	id := g.c.memberID(req.ClientID, req.InstanceID)
	switch {
	case static && old != "":
		return g.replaceStaticLocked(old, id, req, rebalance)
	case !static && req.RequireKnownMemberID:
		// Hand out the id and wait for the member to come back with it,
		// so a client that never sees this response leaves no member
		// behind (KIP-394).
		g.pending[id] = time.AfterFunc(req.SessionTimeout, func() { g.expirePending(id) })
		return nil, &JoinGroupResponse{MemberID: id, GenerationID: -1}, fmt.Errorf("group %q: %w", g.id, ErrMemberIDRequired)
	}
	return g.addMemberLocked(id, req, rebalance), nil, nil
}

// replaceStaticLocked gives a static member that rejoined without its
// member id (a restarted process) a new member id, fencing the old one,
// and takes it back without a rebalance when nothing changed (KIP-345).
func (g *group) replaceStaticLocked(oldID, newID string, req *JoinGroupRequest, rebalance time.Duration) (chan joinOutcome, *JoinGroupResponse, error) {
	m := g.members[oldID]
	m.respondJoin(nil, fmt.Errorf("group %q: static member %q rejoined as %q: %w", g.id, req.InstanceID, newID, ErrFencedInstanceID))
	m.respondSync(nil, fmt.Errorf("group %q: static member %q rejoined as %q: %w", g.id, req.InstanceID, newID, ErrFencedInstanceID))
	delete(g.members, oldID)
	m.id = newID
	g.members[newID] = m
	g.static[req.InstanceID] = newID
	if i := slices.Index(g.order, oldID); i >= 0 {
		g.order[i] = newID
	}
	if g.pendingSync[oldID] {
		delete(g.pendingSync, oldID)
		g.pendingSync[newID] = true
	}

	wasLeader := g.leader == oldID
	if wasLeader {
		g.leader = newID
	}
	m.session, m.rebalance = req.SessionTimeout, rebalance
	m.clientID, m.clientHost = req.ClientID, req.ClientHost
	m.lastHeartbeat = time.Now()
	g.armHeartbeatLocked(m)
	g.notifyLocked()
	pendingRevoke := g.state == StateStable && g.revocationPendingLocked(m)
	m.protocols = slices.Clone(req.Protocols)
	switch g.state {
	case StateStable, StateCompletingRebalance:
		// In Stable, as in Kafka, only a change of the group's protocol
		// forces a rebalance: the restarted process's metadata differs
		// anyway (it owns nothing yet), and its old assignment is what it
		// gets. Before the leader's sync the assignment is still being
		// computed from the old process's metadata, whose claims the new
		// one does not hold: a cooperative leader would withhold
		// partitions that no member then releases. Rebalance with the
		// new metadata instead.
		// In Stable, the old process may also have owed a revocation
		// (cooperative: it claimed partitions its assignment no longer
		// holds), whose rejoin would have handed them on; the new process
		// never makes it, so rebalance for it.
		if g.state == StateCompletingRebalance || pendingRevoke || g.selectProtocolLocked() != g.protocol {
			ch := make(chan joinOutcome, 1)
			m.joinCh = ch
			g.prepareRebalanceLocked("static member " + req.InstanceID + " restarted during a rebalance, owing a revocation, or with other protocols")
			return ch, nil, nil
		}
		if err := g.storeMetadataLocked(); err != nil && g.metadataBinding() { // the member id changed
			// The next coordinator would know only the old id: rebalance,
			// whose record names the new one, rather than answer now.
			ch := make(chan joinOutcome, 1)
			m.joinCh = ch
			g.prepareRebalanceLocked("static member " + req.InstanceID + "'s new member id could not be recorded")
			return ch, nil, nil
		}
		resp := &JoinGroupResponse{
			GenerationID: g.generation, ProtocolType: g.protocolType, ProtocolName: g.protocol,
			LeaderID: g.leader, MemberID: newID,
		}
		if wasLeader {
			// The leader learns the members but must not assign: the
			// group keeps the assignment of the generation (KIP-814).
			resp.SkipAssignment = true
			resp.Members = g.memberMetadataLocked()
		}
		return nil, resp, nil
	}
	// PreparingRebalance: the member waits for the join like the others.
	ch := make(chan joinOutcome, 1)
	m.joinCh = ch
	g.maybeCompleteJoinLocked()
	return ch, nil, nil
}

// revocationPendingLocked reports, for a consumer group, whether m's last
// join claimed partitions that its current assignment does not hold: it
// still has to revoke them and rejoin.
func (g *group) revocationPendingLocked(m *member) bool {
	if g.protocolType != ProtocolTypeConsumer {
		return false
	}
	s, err := decodeSubscription(m.id, m.instanceID, m.metadataFor(g.protocol))
	if err != nil {
		return false
	}
	assigned, err := decodeAssignment(m.assignment)
	if err != nil {
		return false
	}
	for _, tp := range s.Owned {
		if !slices.Contains(assigned, tp) {
			return true
		}
	}
	return false
}

// addMemberLocked adds a member and starts (or joins) a rebalance.
func (g *group) addMemberLocked(id string, req *JoinGroupRequest, rebalance time.Duration) chan joinOutcome {
	m := &member{
		id: id, instanceID: req.InstanceID, clientID: req.ClientID, clientHost: req.ClientHost,
		session: req.SessionTimeout, rebalance: rebalance, protocolType: req.ProtocolType,
		protocols: slices.Clone(req.Protocols), lastHeartbeat: time.Now(),
	}
	if len(g.members) == 0 {
		g.protocolType = req.ProtocolType
	}
	if g.leader == "" {
		g.leader = id
	}
	g.members[id] = m
	g.order = append(g.order, id)
	if m.instanceID != "" {
		g.static[m.instanceID] = id
	}
	ch := make(chan joinOutcome, 1)
	m.joinCh = ch
	if g.state == StatePreparingRebalance && g.initialDelay {
		g.newMemberAdded = true
	}
	g.armHeartbeatLocked(m)
	g.maybePrepareRebalanceLocked("member " + id + " joined")
	return ch
}

// updateMemberLocked records a rejoining member's protocols and waits it
// for the join phase, starting a rebalance if none is running.
func (g *group) updateMemberLocked(m *member, req *JoinGroupRequest, rebalance time.Duration) chan joinOutcome {
	m.protocols = slices.Clone(req.Protocols)
	m.session, m.rebalance = req.SessionTimeout, rebalance
	m.respondJoin(nil, fmt.Errorf("group %q: member %q joined again: %w", g.id, m.id, ErrRebalanceInProgress))
	ch := make(chan joinOutcome, 1)
	m.joinCh = ch
	g.maybePrepareRebalanceLocked("member " + m.id + " rejoined")
	return ch
}

// maybePrepareRebalanceLocked starts a rebalance unless one is in its join
// phase, or completes it if everyone has joined.
func (g *group) maybePrepareRebalanceLocked(reason string) {
	switch g.state {
	case StateStable, StateCompletingRebalance, StateEmpty:
		g.prepareRebalanceLocked(reason)
	case StatePreparingRebalance:
		g.maybeCompleteJoinLocked()
	}
}

// prepareRebalanceLocked moves the group to PreparingRebalance: members
// waiting for an assignment are told to rejoin, and the join phase waits
// for every member up to the rebalance timeout.
func (g *group) prepareRebalanceLocked(reason string) {
	if g.state == StateCompletingRebalance {
		for _, m := range g.members {
			m.assignment = nil
			m.respondSync(nil, fmt.Errorf("group %q: %w", g.id, ErrRebalanceInProgress))
		}
	}
	clear(g.pendingSync)
	if g.syncTimer != nil {
		g.syncTimer.Stop()
		g.syncTimer = nil
	}
	wasEmpty := g.state == StateEmpty
	g.rebalanceSeq++
	seq := g.rebalanceSeq
	if g.joinTimer != nil {
		g.joinTimer.Stop()
	}
	timeout := g.rebalanceTimeoutLocked()
	delay := g.c.opts.InitialRebalanceDelay
	g.initialDelay = wasEmpty && delay > 0
	if g.initialDelay {
		delay = min(delay, timeout)
		g.delayRemaining = max(timeout-delay, 0)
		g.newMemberAdded = false
		g.joinTimer = time.AfterFunc(delay, func() { g.onJoinTimer(seq) })
	} else {
		g.joinTimer = time.AfterFunc(timeout, func() { g.onJoinTimer(seq) })
	}
	g.c.logger.Info("group: preparing to rebalance", "group", g.id, "generation", g.generation, "reason", reason)
	g.transitionLocked(StatePreparingRebalance)
	g.maybeCompleteJoinLocked()
}

// maybeCompleteJoinLocked ends the join phase early when every member has
// rejoined and no handed-out member id is still to come back.
func (g *group) maybeCompleteJoinLocked() {
	if g.state != StatePreparingRebalance || g.initialDelay || len(g.pending) > 0 {
		return
	}
	for _, m := range g.members {
		if m.joinCh == nil {
			return
		}
	}
	g.completeJoinLocked()
}

// onJoinTimer ends a join phase at its deadline.
func (g *group) onJoinTimer(seq int64) {
	g.fenceMu.Lock()
	defer g.fenceMu.Unlock()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed || g.state != StatePreparingRebalance || g.rebalanceSeq != seq {
		return
	}
	if g.initialDelay {
		if g.newMemberAdded && g.delayRemaining > 0 {
			// A member joined during the delay: wait once more for the
			// ones that may follow it.
			d := min(g.c.opts.InitialRebalanceDelay, g.delayRemaining)
			g.delayRemaining -= d
			g.newMemberAdded = false
			g.joinTimer = time.AfterFunc(d, func() { g.onJoinTimer(seq) })
			return
		}
		g.initialDelay = false
	}
	g.completeJoinLocked()
}

// completeJoinLocked ends the join phase: members that did not rejoin are
// removed, the generation advances, and the joined members get their
// responses, the leader with every member's metadata.
func (g *group) completeJoinLocked() {
	if g.joinTimer != nil {
		g.joinTimer.Stop()
		g.joinTimer = nil
	}
	g.initialDelay = false
	for _, id := range slices.Clone(g.order) {
		if m := g.members[id]; m.joinCh == nil {
			g.c.logger.Info("group: member did not rejoin in time; removing it", "group", g.id, "member", id)
			g.c.stats.expired.Add(1)
			g.removeLocked(m, nil)
		}
	}
	g.generation++
	g.c.stats.rebalances.Add(1)
	if len(g.members) == 0 {
		// The protocol type stays, as in Kafka: an Empty group that had
		// consumers is still a consumer group to DescribeGroups and
		// ListGroups (the Java AdminClient takes a group with none for a
		// simple one, that only commits). The next first member sets it.
		g.protocol, g.leader = "", ""
		g.c.logger.Info("group: now empty", "group", g.id, "generation", g.generation)
		g.transitionLocked(StateEmpty)
		// Best effort even with LoadMembers: a next coordinator that finds
		// the previous generation's record takes back members that are
		// gone (they expire) or fenced, and no other member holds a
		// partition for them to share.
		_ = g.storeMetadataLocked()
		return
	}
	g.protocol = g.selectProtocolLocked()
	if g.leader == "" || g.members[g.leader] == nil {
		g.leader = g.order[0]
	}
	g.transitionLocked(StateCompletingRebalance)
	g.c.logger.Info("group: generation complete", "group", g.id, "generation", g.generation,
		"protocol", g.protocol, "leader", g.leader, "members", len(g.members))
	now := time.Now()
	for _, id := range g.order {
		m := g.members[id]
		m.respondJoin(g.joinResponseLocked(m), nil)
		m.lastHeartbeat = now
		g.armHeartbeatLocked(m)
		g.pendingSync[id] = true
	}
	seq := g.rebalanceSeq
	gen := g.generation
	g.syncTimer = time.AfterFunc(g.rebalanceTimeoutLocked(), func() { g.onSyncTimer(seq, gen) })
}

// joinResponseLocked is the join response of the current generation for m.
func (g *group) joinResponseLocked(m *member) *JoinGroupResponse {
	r := &JoinGroupResponse{
		GenerationID: g.generation, ProtocolType: g.protocolType, ProtocolName: g.protocol,
		LeaderID: g.leader, MemberID: m.id,
	}
	if m.id == g.leader {
		r.Members = g.memberMetadataLocked()
	}
	return r
}

func (g *group) memberMetadataLocked() []JoinGroupMember {
	out := make([]JoinGroupMember, 0, len(g.order))
	for _, id := range g.order {
		m := g.members[id]
		out = append(out, JoinGroupMember{MemberID: id, InstanceID: m.instanceID, Metadata: m.metadataFor(g.protocol)})
	}
	return out
}

// onSyncTimer removes the members that did not sync within the rebalance
// timeout after the join, and rebalances without them.
func (g *group) onSyncTimer(seq int64, gen int32) {
	g.fenceMu.Lock()
	defer g.fenceMu.Unlock()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed || g.rebalanceSeq != seq || g.generation != gen || len(g.pendingSync) == 0 {
		return
	}
	if g.state != StateCompletingRebalance && g.state != StateStable {
		return
	}
	late := make([]string, 0, len(g.pendingSync))
	for id := range g.pendingSync {
		late = append(late, id)
	}
	sort.Strings(late)
	for _, id := range late {
		if m := g.members[id]; m != nil {
			g.c.logger.Info("group: member did not sync in time; removing it", "group", g.id, "member", id)
			g.c.stats.expired.Add(1)
			g.removeLocked(m, nil)
		}
	}
	g.maybePrepareRebalanceLocked("members did not sync in time")
}

// removeLocked removes a member; its waiting join or sync gets
// UNKNOWN_MEMBER_ID. update, if set, is the rebalance that follows.
func (g *group) removeLocked(m *member, update func()) {
	err := fmt.Errorf("group %q: member %q was removed: %w", g.id, m.id, ErrUnknownMemberID)
	m.respondJoin(nil, err)
	m.respondSync(nil, err)
	if m.hbTimer != nil {
		m.hbTimer.Stop()
	}
	delete(g.members, m.id)
	if m.instanceID != "" && g.static[m.instanceID] == m.id {
		delete(g.static, m.instanceID)
	}
	g.order = slices.DeleteFunc(g.order, func(id string) bool { return id == m.id })
	delete(g.pendingSync, m.id)
	if g.leader == m.id {
		g.leader = ""
		if len(g.order) > 0 {
			g.leader = g.order[0]
		}
	}
	g.notifyLocked()
	if update != nil {
		update()
	}
}

// removeAndUpdateLocked removes a member and rebalances the rest.
func (g *group) removeAndUpdateLocked(m *member, reason string) {
	g.removeLocked(m, func() {
		switch g.state {
		case StateStable, StateCompletingRebalance:
			g.prepareRebalanceLocked(reason)
		case StatePreparingRebalance:
			g.maybeCompleteJoinLocked()
		}
	})
}

// armHeartbeatLocked (re)starts the session timer of m.
func (g *group) armHeartbeatLocked(m *member) {
	if m.hbTimer != nil {
		m.hbTimer.Stop()
	}
	d := m.session - time.Since(m.lastHeartbeat)
	m.hbTimer = time.AfterFunc(max(d, 0), func() { g.onHeartbeatTimer(m) })
}

// onHeartbeatTimer removes m if its session expired. A member waiting for
// its join or sync response is kept: the join and sync phases have their
// own deadlines.
func (g *group) onHeartbeatTimer(m *member) {
	g.fenceMu.Lock()
	defer g.fenceMu.Unlock()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed || g.members[m.id] != m {
		return
	}
	if m.joinCh != nil || m.syncCh != nil {
		m.lastHeartbeat = time.Now()
		g.armHeartbeatLocked(m)
		return
	}
	if time.Since(m.lastHeartbeat) < m.session {
		g.armHeartbeatLocked(m)
		return
	}
	g.c.logger.Info("group: member session expired; removing it", "group", g.id, "member", m.id,
		"sessionTimeout", m.session)
	g.c.stats.expired.Add(1)
	g.removeAndUpdateLocked(m, "member "+m.id+" session expired")
}

// expirePending forgets a member id handed out with MEMBER_ID_REQUIRED
// that did not come back within its session timeout.
func (g *group) expirePending(id string) {
	g.fenceMu.Lock()
	defer g.fenceMu.Unlock()
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.pending[id]; !ok || g.closed {
		return
	}
	delete(g.pending, id)
	g.maybeCompleteJoinLocked()
}

// SyncGroup completes a rebalance for one member. The leader's request
// carries every member's assignment and moves the group to Stable; every
// member waits until then and gets its own assignment. If ctx ends first,
// SyncGroup returns ctx's error and the member stays in the group; a
// retry with the same generation returns its assignment.
func (c *Coordinator) SyncGroup(ctx context.Context, req *SyncGroupRequest) (*SyncGroupResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if req.Group == "" {
		return nil, fmt.Errorf("sync: %w", ErrInvalidGroupID)
	}
	g, err := c.lookup(req.Group)
	if err != nil {
		return nil, err
	}
	if g == nil {
		return nil, fmt.Errorf("group %q: member %q: %w", req.Group, req.MemberID, ErrUnknownMemberID)
	}
	g.mu.Lock()
	ch, resp, err := g.syncLocked(req)
	g.mu.Unlock()
	if ch == nil {
		return resp, err
	}
	select {
	case o := <-ch:
		return o.resp, o.err
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

func (g *group) syncLocked(req *SyncGroupRequest) (chan syncOutcome, *SyncGroupResponse, error) {
	if g.closed {
		return nil, nil, g.closeErr
	}
	if g.state == StateDead {
		return nil, nil, fmt.Errorf("group %q: %w", g.id, ErrCoordinatorNotAvailable)
	}
	m, err := g.validateMemberLocked(req.MemberID, req.InstanceID)
	if err != nil {
		return nil, nil, err
	}
	if req.GenerationID != g.generation {
		return nil, nil, fmt.Errorf("group %q: member %q synced generation %d, group at %d: %w", g.id, m.id, req.GenerationID, g.generation, ErrIllegalGeneration)
	}
	if req.ProtocolType != "" && req.ProtocolType != g.protocolType || req.ProtocolName != "" && req.ProtocolName != g.protocol {
		return nil, nil, fmt.Errorf("group %q: member %q synced protocol %s/%s, group uses %s/%s: %w", g.id, m.id,
			req.ProtocolType, req.ProtocolName, g.protocolType, g.protocol, ErrInconsistentGroupProtocol)
	}
	switch g.state {
	case StateEmpty:
		return nil, nil, fmt.Errorf("group %q is empty: %w", g.id, ErrUnknownMemberID)
	case StatePreparingRebalance:
		return nil, nil, fmt.Errorf("group %q: %w", g.id, ErrRebalanceInProgress)
	case StateStable:
		g.syncedLocked(m.id)
		m.lastHeartbeat = time.Now()
		return nil, &SyncGroupResponse{ProtocolType: g.protocolType, ProtocolName: g.protocol, Assignment: slices.Clone(m.assignment)}, nil
	}
	// CompletingRebalance.
	g.syncedLocked(m.id)
	m.lastHeartbeat = time.Now()
	m.respondSync(nil, fmt.Errorf("group %q: member %q synced again: %w", g.id, m.id, ErrRebalanceInProgress))
	ch := make(chan syncOutcome, 1)
	m.syncCh = ch
	if m.id == g.leader {
		plan := make(map[string][]byte, len(req.Assignments))
		for _, a := range req.Assignments {
			plan[a.MemberID] = a.Assignment
		}

		for _, id := range g.order {
			g.members[id].assignment = slices.Clone(plan[id]) // members the leader left out get nothing
		}
		g.transitionLocked(StateStable)
		// As in Kafka, the generation's record is written before any
		// member hears its assignment.
		if err := g.storeMetadataLocked(); err != nil && g.metadataBinding() {
			// The next coordinator would take the previous generation's
			// members back: no member may hear of this one. They rejoin.
			err = fmt.Errorf("group %q: generation %d's record could not be written: %w: %w", g.id, g.generation, ErrCoordinatorNotAvailable, err)
			for _, id := range g.order {
				mm := g.members[id]
				mm.assignment = nil
				mm.respondSync(nil, err)
			}
			g.prepareRebalanceLocked("the generation's metadata record could not be written")
			return ch, nil, nil
		}
		for _, id := range g.order {
			mm := g.members[id]
			mm.respondSync(&SyncGroupResponse{ProtocolType: g.protocolType, ProtocolName: g.protocol, Assignment: slices.Clone(mm.assignment)}, nil)
		}
	}
	return ch, nil, nil
}

// syncedLocked records that a member synced; the sync deadline stops once
// every member has.
func (g *group) syncedLocked(id string) {
	delete(g.pendingSync, id)
	if len(g.pendingSync) == 0 && g.syncTimer != nil {
		g.syncTimer.Stop()
		g.syncTimer = nil
	}
}

// Heartbeat keeps a member's session alive. It returns nil, or
// ErrRebalanceInProgress to make the member rejoin, or the error that
// fenced it (ErrUnknownMemberID, ErrIllegalGeneration,
// ErrFencedInstanceID).
func (c *Coordinator) Heartbeat(ctx context.Context, req *HeartbeatRequest) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if req.Group == "" {
		return fmt.Errorf("heartbeat: %w", ErrInvalidGroupID)
	}
	g, err := c.lookup(req.Group)
	if err != nil {
		return err
	}
	if g == nil {
		return fmt.Errorf("group %q: member %q: %w", req.Group, req.MemberID, ErrUnknownMemberID)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return g.closeErr
	}
	if g.state == StateDead {
		return fmt.Errorf("group %q: %w", g.id, ErrCoordinatorNotAvailable)
	}
	m, err := g.validateMemberLocked(req.MemberID, req.InstanceID)
	if err != nil {
		return err
	}
	if req.GenerationID != g.generation {
		return fmt.Errorf("group %q: member %q at generation %d, group at %d: %w", g.id, m.id, req.GenerationID, g.generation, ErrIllegalGeneration)
	}
	switch g.state {
	case StateEmpty:
		return fmt.Errorf("group %q is empty: %w", g.id, ErrUnknownMemberID)
	case StatePreparingRebalance:
		m.lastHeartbeat = time.Now()
		return fmt.Errorf("group %q: %w", g.id, ErrRebalanceInProgress)
	}
	m.lastHeartbeat = time.Now()
	return nil
}

// LeaveGroup removes members (by member id, or by instance id for static
// members) and rebalances the rest.
func (c *Coordinator) LeaveGroup(ctx context.Context, req *LeaveGroupRequest) (*LeaveGroupResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if req.Group == "" {
		return nil, fmt.Errorf("leave: %w", ErrInvalidGroupID)
	}
	g, err := c.lookup(req.Group)
	if err != nil {
		return nil, err
	}
	resp := &LeaveGroupResponse{}
	if g == nil {
		for _, lm := range req.Members {
			resp.Members = append(resp.Members, LeaveGroupMemberResponse{lm.MemberID, lm.InstanceID,
				fmt.Errorf("group %q: member %q: %w", req.Group, lm.MemberID, ErrUnknownMemberID)})
		}
		return resp, nil
	}
	g.fenceMu.Lock()
	defer g.fenceMu.Unlock()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil, g.closeErr
	}
	if g.state == StateDead {
		return nil, fmt.Errorf("group %q: %w", g.id, ErrCoordinatorNotAvailable)
	}
	for _, lm := range req.Members {
		r := LeaveGroupMemberResponse{MemberID: lm.MemberID, InstanceID: lm.InstanceID}
		switch {
		case lm.InstanceID != "" && g.static[lm.InstanceID] != "" && lm.MemberID != "" && g.static[lm.InstanceID] != lm.MemberID:
			r.Err = fmt.Errorf("group %q: static member %q is %q, not %q: %w", g.id, lm.InstanceID, g.static[lm.InstanceID], lm.MemberID, ErrFencedInstanceID)
		case g.pending[lm.MemberID] != nil:
			g.pending[lm.MemberID].Stop()
			delete(g.pending, lm.MemberID)
			g.maybeCompleteJoinLocked()
		default:
			id := lm.MemberID
			if lm.InstanceID != "" {
				id = g.static[lm.InstanceID]
			}
			m := g.members[id]
			if m == nil {
				r.Err = fmt.Errorf("group %q: member %q: %w", g.id, lm.MemberID, ErrUnknownMemberID)
				break
			}
			reason := lm.Reason
			if reason == "" {
				reason = "member " + id + " left"
			}
			g.c.logger.Info("group: member left", "group", g.id, "member", id, "reason", reason)
			g.removeAndUpdateLocked(m, reason)
		}
		resp.Members = append(resp.Members, r)
	}
	return resp, nil
}

// shutdown stops the group's timers and fails its waiting requests with
// err, for Coordinator.Close (errClosed) and UnloadPartition (a
// *NotCoordinatorError); later calls on the group get err too.
func (g *group) shutdown(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed, g.closeErr = true, err
	for _, t := range []*time.Timer{g.joinTimer, g.syncTimer} {
		if t != nil {
			t.Stop()
		}
	}
	for _, t := range g.pending {
		t.Stop()
	}
	for _, m := range g.members {
		if m.hbTimer != nil {
			m.hbTimer.Stop()
		}
		m.respondJoin(nil, err)
		m.respondSync(nil, err)
	}
	g.notifyLocked()
}
