package ui

import (
	"bytes"
	"fmt"
	"image"
	"image/draw"
	"image/png"
	"log/slog"
	"slices"
	"sync"

	"github.com/godbus/dbus/v5"

	"github.com/delta-roads/delta/assets"
)

const (
	fdoName  = "org.freedesktop.Notifications"
	fdoPath  = "/org/freedesktop/Notifications"
	fdoIface = "org.freedesktop.Notifications"
)

// fdoSender shows notifications through org.freedesktop.Notifications
// (the Desktop Notifications Specification 1.2) on the session bus, with
// Delta's icon as image-data, and actions where the server has them.
type fdoSender struct {
	log  *slog.Logger
	acts chan<- Action

	mu    sync.Mutex
	conn  *dbus.Conn
	caps  []string
	icon  *dbus.Variant
	calls map[uint32]string // notification id → the call it is about
	done  chan struct{}     // the signal loop ended
}

func systemSender(log *slog.Logger, acts chan<- Action) SenderCloser {
	return &fdoSender{log: log, acts: acts, calls: map[uint32]string{}}
}

// connect opens the session bus once, reads the server's capabilities and
// follows its ActionInvoked signals.
func (s *fdoSender) connect() (*dbus.Conn, error) {
	if s.conn != nil {
		return s.conn, nil
	}
	conn, err := dbus.ConnectSessionBus()
	if err != nil {
		return nil, fmt.Errorf("notifications: no session bus: %w", err)
	}
	if err := conn.Object(fdoName, fdoPath).Call(fdoIface+".GetCapabilities", 0).Store(&s.caps); err != nil {
		conn.Close()
		return nil, fmt.Errorf("notifications: %s does not answer on the session bus: %w", fdoName, err)
	}
	if err := conn.AddMatchSignal(dbus.WithMatchObjectPath(fdoPath), dbus.WithMatchInterface(fdoIface), dbus.WithMatchMember("ActionInvoked")); err != nil {
		conn.Close()
		return nil, fmt.Errorf("notifications: follow ActionInvoked: %w", err)
	}
	signals := make(chan *dbus.Signal, 16)
	conn.Signal(signals)
	s.done = make(chan struct{})
	go s.follow(signals, s.done)
	if img, err := imageData(assets.AppIcon(), 128); err == nil {
		s.icon = &img
	} else {
		s.log.Warn("notifications: Delta's icon could not be read; shown without it", "err", err)
	}
	s.conn = conn
	return conn, nil
}

// follow hands clicked actions on, until the connection closes (godbus
// closes the channel then).
func (s *fdoSender) follow(signals <-chan *dbus.Signal, done chan<- struct{}) {
	defer close(done)
	for sig := range signals {
		if sig.Name != fdoIface+".ActionInvoked" || len(sig.Body) != 2 {
			continue
		}
		id, _ := sig.Body[0].(uint32)
		key, _ := sig.Body[1].(string)
		s.mu.Lock()
		rid, ours := s.calls[id]
		s.mu.Unlock()
		if ours {
			deliver(s.log, s.acts, key, rid)
		}
	}
}

// fdoActions are the actions a note gets from a server with caps: "Open
// status page" as the note's default (a click on its body; servers such
// as xfce4-notifyd draw the default as a button too, so it is not offered
// twice) and, for a note about one call, "Ask now"; none where the server
// cannot show actions. Pure, for tests.
func fdoActions(caps []string, n Note) []string {
	if !slices.Contains(caps, "actions") {
		return []string{}
	}
	if n.PairID != "" {
		return []string{"default", "Open Setup Page", NoteAccept, "Accept"}
	}
	acts := []string{"default", "Open status page"}
	if n.RequestID != "" {
		acts = append(acts, NoteAsk, "Ask now")
	}
	return acts
}

func (s *fdoSender) Send(n Note) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	conn, err := s.connect()
	if err != nil {
		return err
	}
	hints := map[string]dbus.Variant{"desktop-entry": dbus.MakeVariant("delta")}
	if s.icon != nil {
		hints["image-data"] = *s.icon
	}
	var id uint32
	if err := conn.Object(fdoName, fdoPath).Call(fdoIface+".Notify", 0,
		"Delta", uint32(0), "", n.Title, n.Body, fdoActions(s.caps, n), hints, int32(-1)).Store(&id); err != nil {
		return fmt.Errorf("notifications: Notify: %w", err)
	}
	s.calls[id] = noteKey(n)
	if len(s.calls) > 256 { // old notes' clicks are forgotten: ids are not reused soon
		for k := range s.calls {
			if id > 128 && k < id-128 {
				delete(s.calls, k)
			}
		}
	}
	return nil
}

func (s *fdoSender) Close() error {
	s.mu.Lock()
	conn, done := s.conn, s.done
	s.conn = nil
	s.mu.Unlock()
	if conn == nil {
		return nil
	}
	err := conn.Close()
	<-done
	return err
}

// imageData is the image-data hint (iiibiiay: width, height, rowstride,
// has alpha, bits per sample, channels, RGBA bytes) of a PNG, scaled to
// size×size (nearest neighbour: an icon).
func imageData(pngBytes []byte, size int) (dbus.Variant, error) {
	src, err := png.Decode(bytes.NewReader(pngBytes))
	if err != nil {
		return dbus.Variant{}, err
	}
	full := image.NewRGBA(src.Bounds())
	draw.Draw(full, full.Bounds(), src, src.Bounds().Min, draw.Src)
	w, h := full.Bounds().Dx(), full.Bounds().Dy()
	out := make([]byte, 0, size*size*4)
	for y := range size {
		for x := range size {
			o := full.PixOffset(x*w/size, y*h/size)
			out = append(out, full.Pix[o:o+4]...)
		}
	}
	return dbus.MakeVariant(struct {
		W, H, Stride int32
		Alpha        bool
		Bits, Chans  int32
		Data         []byte
	}{int32(size), int32(size), int32(size * 4), true, 8, 4, out}), nil
}
