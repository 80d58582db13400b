// Package uitest reads Delta's tray the way a desktop does, for tests: a
// private DBus session bus (dbus-daemon, loading no host services), the
// menu read through com.canonical.dbusmenu as a panel reads it, clicks sent
// as dbusmenu events, a fake org.freedesktop.Notifications server that
// records what it is asked to show, and a fake StatusNotifierWatcher that
// records who registered.
package uitest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
)

// Bus is a private session bus.
type Bus struct {
	Addr string // for DBUS_SESSION_BUS_ADDRESS
	Conn *dbus.Conn
}

// StartBus starts a private dbus-daemon for the test, or skips the test
// with the reason when the machine has none. It is stopped at cleanup.
func StartBus(t testing.TB) *Bus {
	t.Helper()
	daemon, err := exec.LookPath("dbus-daemon")
	if err != nil {
		t.Skip("dbus-daemon is not installed (Debian package dbus; `make test` installs it when root): the tray cannot be tested without a session bus")
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "session.conf")
	os.WriteFile(conf, []byte(`<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path=`+filepath.Join(dir, "bus")+`</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
`), 0o600)
	cmd := exec.Command(daemon, "--config-file="+conf, "--nofork", "--print-address")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder // "failed to set fd limit" and the like, shown on failure
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start dbus-daemon: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() && stderr.Len() > 0 {
			t.Logf("dbus-daemon said: %s", stderr.String())
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("dbus-daemon printed no address: %v", err)
	}

	b := &Bus{Addr: strings.TrimSpace(line)}
	if b.Conn, err = b.Connect(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Conn.Close() })
	return b
}

// Connect opens another connection to the bus.
func (b *Bus) Connect() (*dbus.Conn, error) {
	conn, err := dbus.Connect(b.Addr)
	if err != nil {
		return nil, fmt.Errorf("connect to the private bus %s: %w", b.Addr, err)
	}
	return conn, nil
}

// Notification is one Notify call the fake server received.
type Notification struct {
	ID                     uint32
	AppName, Summary, Body string
	HasImage               bool     // an image-data hint came with it (Delta's icon)
	Actions                []string // key, label, key, label, …
}

// Notifications is a fake org.freedesktop.Notifications server.
type Notifications struct {
	// Caps are the capabilities it reports (SetCaps); ServeNotifications
	// sets "body" and "icon-static" (no actions), as a minimal server does.
	Caps []string

	conn *dbus.Conn
	mu   sync.Mutex
	got  []Notification
	wake chan struct{}
}

// Notify implements org.freedesktop.Notifications.Notify.
func (n *Notifications) Notify(appName string, replaces uint32, icon, summary, body string, actions []string, hints map[string]dbus.Variant, timeout int32) (uint32, *dbus.Error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	_, img := hints["image-data"]
	id := uint32(len(n.got) + 1)
	n.got = append(n.got, Notification{ID: id, AppName: appName, Summary: summary, Body: body, HasImage: img, Actions: actions})
	close(n.wake)
	n.wake = make(chan struct{})
	return id, nil
}

// SetCaps sets the capabilities it reports.
func (n *Notifications) SetCaps(caps ...string) {
	n.mu.Lock()
	n.Caps = caps
	n.mu.Unlock()
}

// Invoke emits ActionInvoked for notification id, as a server does when
// a person clicks one of its actions.
func (n *Notifications) Invoke(id uint32, key string) error {
	return n.conn.Emit("/org/freedesktop/Notifications", "org.freedesktop.Notifications.ActionInvoked", id, key)
}

// GetCapabilities implements org.freedesktop.Notifications.
func (n *Notifications) GetCapabilities() ([]string, *dbus.Error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.Caps, nil
}

// GetServerInformation implements org.freedesktop.Notifications.
func (n *Notifications) GetServerInformation() (string, string, string, string, *dbus.Error) {
	return "uitest", "delta", "1", "1.2", nil
}

// CloseNotification implements org.freedesktop.Notifications.
func (n *Notifications) CloseNotification(id uint32) *dbus.Error { return nil }

// ServeNotifications owns org.freedesktop.Notifications on the bus.
func (b *Bus) ServeNotifications(t testing.TB) *Notifications {
	t.Helper()
	n := &Notifications{wake: make(chan struct{}), Caps: []string{"body", "icon-static"}, conn: b.Conn}
	if err := b.Conn.Export(n, "/org/freedesktop/Notifications", "org.freedesktop.Notifications"); err != nil {
		t.Fatal(err)
	}
	if r, err := b.Conn.RequestName("org.freedesktop.Notifications", dbus.NameFlagDoNotQueue); err != nil || r != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("own org.freedesktop.Notifications: %v %v", r, err)
	}
	return n
}

// All returns what was shown so far.
func (n *Notifications) All() []Notification {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]Notification(nil), n.got...)
}

// WaitFor waits until a notification whose summary contains sub arrives
// and returns it.
func (n *Notifications) WaitFor(t testing.TB, sub string, d time.Duration) Notification {
	t.Helper()
	deadline := time.After(d)
	for {
		n.mu.Lock()
		for _, g := range n.got {
			if strings.Contains(g.Summary, sub) {
				n.mu.Unlock()
				return g
			}
		}
		wake := n.wake
		n.mu.Unlock()
		select {
		case <-wake:
		case <-deadline:
			t.Fatalf("no notification %q within %v; got %+v", sub, d, n.All())
		}
	}
}

// Watcher is a fake org.kde.StatusNotifierWatcher.
type Watcher struct {
	mu    sync.Mutex
	items []string
}

// RegisterStatusNotifierItem implements org.kde.StatusNotifierWatcher.
func (w *Watcher) RegisterStatusNotifierItem(sender dbus.Sender, item string) *dbus.Error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.items = append(w.items, string(sender)+" "+item)
	return nil
}

// Items returns who registered which item path.
func (w *Watcher) Items() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.items...)
}

// ServeWatcher owns org.kde.StatusNotifierWatcher on the bus.
func (b *Bus) ServeWatcher(t testing.TB) *Watcher {
	t.Helper()
	w := &Watcher{}
	if err := b.Conn.Export(w, "/StatusNotifierWatcher", "org.kde.StatusNotifierWatcher"); err != nil {
		t.Fatal(err)
	}
	if r, err := b.Conn.RequestName("org.kde.StatusNotifierWatcher", dbus.NameFlagDoNotQueue); err != nil || r != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("own org.kde.StatusNotifierWatcher: %v %v", r, err)
	}
	return w
}

// MenuItem is one dbusmenu item as a panel sees it.
type MenuItem struct {
	ID       int32
	Label    string
	Enabled  bool
	Visible  bool
	Children []MenuItem
}

// Tray is the tray item of one process on the bus.
type Tray struct {
	bus  *Bus
	name string
	menu dbus.ObjectPath
}

// WaitTray waits for process pid's StatusNotifierItem to appear.
func (b *Bus) WaitTray(t testing.TB, pid int, d time.Duration) *Tray {
	t.Helper()
	name := fmt.Sprintf("org.kde.StatusNotifierItem-%d-1", pid)
	// Watch for the name first, then ask whether it is there: no race.
	conn, err := b.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.AddMatchSignal(dbus.WithMatchInterface("org.freedesktop.DBus"), dbus.WithMatchMember("NameOwnerChanged"), dbus.WithMatchArg(0, name)); err != nil {
		t.Fatal(err)
	}
	sigs := make(chan *dbus.Signal, 8)
	conn.Signal(sigs)
	var has bool
	conn.BusObject().Call("org.freedesktop.DBus.NameHasOwner", 0, name).Store(&has)
	deadline := time.After(d)
	for !has {
		select {
		case s := <-sigs:
			has = s != nil && len(s.Body) == 3 && s.Body[2] != ""
		case <-deadline:
			t.Fatalf("no %s on the bus within %v", name, d)
		}
	}
	// fyne's systray takes its name before it exports its objects
	// (systray_unix.go nativeStart): the Menu property is there a moment
	// later.
	var v dbus.Variant
	for {
		v, err = b.Conn.Object(name, "/StatusNotifierItem").GetProperty("org.kde.StatusNotifierItem.Menu")
		if err == nil {
			break
		}
		select {
		case <-deadline:
			t.Fatalf("read %s's Menu property: %v", name, err)
		case <-time.After(10 * time.Millisecond): // the next look; bounded by the deadline
		}
	}
	return &Tray{bus: b, name: name, menu: v.Value().(dbus.ObjectPath)}
}

// Property reads a StatusNotifierItem property (ToolTip, IconPixmap…).
func (tr *Tray) Property(prop string) (dbus.Variant, error) {
	return tr.bus.Conn.Object(tr.name, "/StatusNotifierItem").GetProperty("org.kde.StatusNotifierItem." + prop)
}

// Layout reads the whole menu with GetLayout. The first call after the
// menu was built or reset may be shallow, so it is read twice.
func (tr *Tray) Layout() ([]MenuItem, error) {
	var root MenuItem
	for range 2 {
		var rev uint32
		var layout struct {
			ID       int32
			Props    map[string]dbus.Variant
			Children []dbus.Variant
		}
		call := tr.bus.Conn.Object(tr.name, tr.menu).Call("com.canonical.dbusmenu.GetLayout", 0, int32(0), int32(-1), []string{})
		if err := call.Store(&rev, &layout); err != nil {
			return nil, fmt.Errorf("GetLayout: %w", err)
		}
		var err error
		if root, err = parseItem([]any{layout.ID, layout.Props, layout.Children}); err != nil {
			return nil, err
		}
	}
	return root.Children, nil
}

func parseItem(v any) (MenuItem, error) {
	parts, ok := v.([]any)
	if !ok || len(parts) != 3 {
		return MenuItem{}, fmt.Errorf("dbusmenu item %T is not (ia{sv}av)", v)
	}
	it := MenuItem{ID: parts[0].(int32), Enabled: true, Visible: true}
	props := parts[1].(map[string]dbus.Variant)
	if l, ok := props["label"]; ok {
		it.Label, _ = l.Value().(string)
	}
	if e, ok := props["enabled"]; ok {
		it.Enabled, _ = e.Value().(bool)
	}
	if e, ok := props["visible"]; ok {
		it.Visible, _ = e.Value().(bool)
	}
	if tp, ok := props["type"]; ok && tp.Value() == "separator" {
		it.Label = "--"
	}
	for _, c := range parts[2].([]dbus.Variant) {
		child, err := parseItem(c.Value())
		if err != nil {
			return it, err
		}
		if child.Visible {
			it.Children = append(it.Children, child)
		}
	}
	return it, nil
}

// Click sends a "clicked" event to item id, as a panel does.
func (tr *Tray) Click(id int32) error {
	return tr.bus.Conn.Object(tr.name, tr.menu).Call("com.canonical.dbusmenu.Event", 0,
		id, "clicked", dbus.MakeVariant(""), uint32(time.Now().Unix())).Err
}

// Find returns the first item whose label starts with prefix, searching
// depth first.
func Find(items []MenuItem, prefix string) (MenuItem, bool) {
	for _, it := range items {
		if strings.HasPrefix(it.Label, prefix) {
			return it, true
		}
		if f, ok := Find(it.Children, prefix); ok {
			return f, true
		}
	}
	return MenuItem{}, false
}

// Lines renders items as indented lines, for failure messages.
func Lines(items []MenuItem) string {
	var b strings.Builder
	var walk func([]MenuItem, string)
	walk = func(items []MenuItem, indent string) {
		for _, it := range items {
			mark := ""
			if !it.Enabled {
				mark = " (disabled)"
			}
			fmt.Fprintf(&b, "%s%s%s\n", indent, it.Label, mark)
			walk(it.Children, indent+"  ")
		}
	}
	walk(items, "")
	return b.String()
}

// WaitMenu reads the menu each time the tray says it changed (dbusmenu's
// LayoutUpdated and ItemsPropertiesUpdated signals) until cond holds, and
// returns it; the test fails after d, naming what it waited for.
func (tr *Tray) WaitMenu(t testing.TB, d time.Duration, what string, cond func([]MenuItem) bool) []MenuItem {
	t.Helper()
	conn, err := tr.bus.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, member := range []string{"LayoutUpdated", "ItemsPropertiesUpdated"} {
		if err := conn.AddMatchSignal(dbus.WithMatchObjectPath(tr.menu), dbus.WithMatchInterface("com.canonical.dbusmenu"), dbus.WithMatchMember(member)); err != nil {
			t.Fatal(err)
		}
	}
	sigs := make(chan *dbus.Signal, 64)
	conn.Signal(sigs)
	deadline := time.After(d)
	var items []MenuItem
	for {
		if items, err = tr.Layout(); err != nil {
			t.Fatal(err)
		}
		if cond(items) {
			return items
		}
		select {
		case <-sigs:
		case <-deadline:
			t.Fatalf("waited %v for the menu to show %s; it shows:\n%s", d, what, Lines(items))
		}
	}
}
