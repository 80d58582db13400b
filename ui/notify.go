package ui

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/delta-roads/delta/gateway/wire/record"
	"github.com/delta-roads/delta/gateway/wire/view"
)

// Note is one notification: what happened, where, and what to do.
type Note struct {
	Title string
	Body  string
	// RequestID is the call the note is about, when it is about one: its
	// actions ("Open status page", "Ask now") act on it.
	RequestID string
	// PairID is the computer asking to pair that the note is about, when
	// it is about one: its action ("Accept") accepts it.
	PairID string
}

// Notification actions: the keys a notification server (or the macOS
// delegate) reports when a person clicks the note or one of its buttons.
const (
	NoteOpen = "open" // "Open status page" (also the note's body, "default")
	NoteAsk  = "ask"  // "Ask now"
	// NoteAccept accepts a request to pair ("Accept").
	NoteAccept = "accept"
	// pairNote marks the key a sender keeps for a note about a request
	// to pair: "pair:" and the asker's ID.
	pairNote = "pair:"
)

// noteKey is what a sender keeps of n to act on its clicks: its call's
// request id, or pairNote and its asker's ID.
func noteKey(n Note) string {
	if n.PairID != "" {
		return pairNote + n.PairID
	}
	return n.RequestID
}

// NoteAction is what clicking a note's action asks for, as a menu click
// would: the status page at the call, or asking its owner now. ok is false
// for keys Delta did not give.
func NoteAction(key, requestID string) (Action, bool) {
	if id, ok := strings.CutPrefix(requestID, pairNote); ok {
		switch key {
		case NoteOpen, "default":
			return Action{Kind: ActSetup, Section: "pair"}, true
		case NoteAccept:
			return Action{Kind: ActAcceptPair, PairID: id}, true
		}
		return Action{}, false
	}
	if requestID == "" {
		return Action{Kind: ActOpen}, key == NoteOpen || key == "default"
	}
	switch key {
	case NoteOpen, "default":
		return Action{Kind: ActOpen, CallID: requestID}, true
	case NoteAsk:
		return Action{Kind: ActAsk, CallID: requestID}, true
	}
	return Action{}, false
}

// Sender shows notifications: the system's notification center on macOS,
// org.freedesktop.Notifications on Linux.
type Sender interface {
	Send(n Note) error
}

// SenderFunc adapts a function to Sender.
type SenderFunc func(Note) error

// Send implements Sender.
func (f SenderFunc) Send(n Note) error { return f(n) }

// noteKind is what a call event means to a person.
type noteKind int

const (
	noteNone       noteKind = iota
	noteUnsettled           // sent, and no answer came: outcome unknown
	noteCarried             // settled: carried out
	noteNotCarried          // settled: provably not carried out
	noteNeedsYou            // the owner cannot tell; a person must look
)

// kindOf classifies one journal event.
func kindOf(e record.Event) noteKind {
	if e.State == e.From {
		return noteNone // the owner said something new, or a dismissal
	}
	switch e.State {
	case record.Unknown:
		return noteUnsettled
	case record.CarriedOut:
		return noteCarried
	case record.NotCarriedOut:
		return noteNotCarried
	case record.NeedsPerson:
		return noteNeedsYou
	}
	return noteNone
}

// Coalesce is how long the notifier gathers events before it shows them:
// a burst of calls becoming unsettled (a cable pulled under ten writes) is
// one notification, not ten.
const Coalesce = 750 * time.Millisecond

// Events are the journal's call events, as the notifier follows them
// (served by the gateway's CallEvents, or a journal in tests).
type Events interface {
	// LastEventSeq is the newest event's sequence number, 0 if none.
	LastEventSeq(ctx context.Context) (int64, error)
	// EventsAfter returns up to limit events after the cursor, oldest first.
	EventsAfter(ctx context.Context, after int64, limit int) ([]record.Event, error)
	// Call returns a call's record.
	Call(ctx context.Context, id string) (*record.Call, error)
	// Changed closes at the next change to the record.
	Changed() <-chan struct{}
}

// Notifier follows the journal's call events and turns them into
// notifications (DESIGN §6).
type Notifier struct {
	Events Events
	Sender Sender
	Log    *slog.Logger
	// Window is the coalescing window; if 0, Coalesce.
	Window time.Duration
}

// Run notifies about events after the journal's newest one at the time of
// the call, until ctx ends.
func (n *Notifier) Run(ctx context.Context) error {
	cursor, err := n.Events.LastEventSeq(ctx)
	if err != nil {
		return err
	}
	return n.RunFrom(ctx, cursor)
}

// RunFrom notifies about events after cursor until ctx ends.
func (n *Notifier) RunFrom(ctx context.Context, cursor int64) error {
	window := n.Window
	if window == 0 {
		window = Coalesce
	}
	for {
		changed := n.Events.Changed()
		evs, err := n.Events.EventsAfter(ctx, cursor, 1000)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			n.Log.Error("notifications: read the journal's call events", "err", err)
		}
		if len(evs) > 0 {
			cursor = evs[len(evs)-1].Seq
			var notable []record.Event
			for _, e := range evs {
				if kindOf(e) != noteNone {
					notable = append(notable, e)
				}
			}
			if len(notable) > 0 {
				// Gather what else happens within the window, then show it all.
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(window):
				}
				more, _ := n.Events.EventsAfter(ctx, cursor, 1000)
				if len(more) > 0 {
					cursor = more[len(more)-1].Seq
				}
				for _, e := range more {
					if kindOf(e) != noteNone {
						notable = append(notable, e)
					}
				}
				for _, note := range n.compose(ctx, notable) {
					note.Title, note.Body = view.Safe(note.Title), view.Safe(note.Body)
					if err := n.Sender.Send(note); err != nil {
						n.Log.Warn("could not show a notification", "err", err, "title", note.Title)
					}
				}
				continue
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		}
	}
}

// compose turns a batch of events into notifications: per kind, one about
// the call if there is one, else one that counts them. A call that became
// unsettled and settled within the batch is told once, by how it settled.
func (n *Notifier) compose(ctx context.Context, evs []record.Event) []Note {
	last := map[string]noteKind{}
	var order []string
	for _, e := range evs {
		if _, seen := last[e.RequestID]; !seen {
			order = append(order, e.RequestID)
		}
		last[e.RequestID] = kindOf(e)
	}
	byKind := map[noteKind][]*record.Call{}
	for _, id := range order {
		c, err := n.Events.Call(ctx, id)
		if err != nil {
			continue // swept meanwhile
		}
		byKind[last[id]] = append(byKind[last[id]], c)
	}
	var out []Note
	for _, k := range []noteKind{noteNeedsYou, noteUnsettled, noteNotCarried, noteCarried} {
		if cs := byKind[k]; len(cs) > 0 {
			out = append(out, noteFor(k, cs))
		}
	}
	return out
}

// noteFor writes the notification for calls that all reached kind k.
func noteFor(k noteKind, cs []*record.Call) Note {
	if len(cs) == 1 {
		n := noteForOne(k, cs[0])
		n.RequestID = cs[0].RequestID
		return n
	}
	return noteForMany(k, cs)
}

// noteForOne writes the notification for one call.
func noteForOne(k noteKind, c *record.Call) Note {
	line := view.CallLine(c)
	switch k {
	case noteUnsettled:
		return Note{Title: "A write's outcome is unknown",
			Body: fmt.Sprintf("%s left this computer and no answer came. Delta will not send it again; it is asking %s whether it was carried out.", line, c.Peer)}
	case noteCarried, noteNotCarried:
		if c.SettledBy != "" {
			return Note{Title: "Write settled by you",
				Body: fmt.Sprintf("%s: %s. Delta no longer asks %s about it.", line, capitalize(view.Words(c.State)), c.Peer)}
		}
	}
	switch k {
	case noteCarried:
		return Note{Title: "Write carried out",
			Body: fmt.Sprintf("%s: %s says it was carried out. Nothing more to do.", line, c.Peer)}
	case noteNotCarried:
		return Note{Title: "Write not carried out",
			Body: fmt.Sprintf("%s: %s says it never arrived, so it was not carried out. It is safe to send it again.", line, c.Peer)}
	default:
		sent := ""
		if c.Request != nil {
			sent = " (sent: " + view.Excerpt(c.Request, 60) + ")"
		}
		return Note{Title: "A write needs you",
			Body: fmt.Sprintf("%s%s: %s cannot tell whether its app carried it out. Check %s on %s, then open the status page at this write and choose It happened or It did not happen.", line, sent, c.Peer, c.App, c.Peer)}
	}
}

// noteForMany writes the notification that counts calls of one kind.
func noteForMany(k noteKind, cs []*record.Call) Note {
	var lines []string
	for i, c := range cs {
		if i == 3 {
			lines = append(lines, fmt.Sprintf("and %d more", len(cs)-3))
			break
		}
		lines = append(lines, view.CallLine(c))
	}
	list := strings.Join(lines, "; ")
	switch k {
	case noteUnsettled:
		return Note{Title: fmt.Sprintf("%d writes' outcomes are unknown", len(cs)),
			Body: list + ". Delta will not send them again; it is asking their owners whether they were carried out."}
	case noteCarried:
		return Note{Title: fmt.Sprintf("%d writes carried out", len(cs)), Body: list + ". Nothing more to do."}
	case noteNotCarried:
		return Note{Title: fmt.Sprintf("%d writes not carried out", len(cs)), Body: list + ". They never arrived; it is safe to send them again."}
	}
	return Note{Title: fmt.Sprintf("%d writes need you", len(cs)),
		Body: list + ". Their owners cannot tell whether they were carried out: check each, then dismiss it in Delta's menu."}
}
