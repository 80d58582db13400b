package statedir

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestMoved: the first start records the machine; a start on the same
// one changes nothing; a start on another sets the identity aside (never
// deleting it), keeps the journal and the config, and records the new
// machine; the next start there is quiet.
func TestMoved(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{TicketKeyFile, NodeIDFile, "tls-key.pem", "tls-cert.pem", JournalFile, ConfigFile} {
		os.WriteFile(filepath.Join(dir, f), []byte(f), 0o600)
	}
	os.MkdirAll(filepath.Join(dir, TailnetDir), 0o700)
	os.WriteFile(filepath.Join(dir, TailnetDir, "tailscaled.state"), []byte("node key"), 0o600)
	now := time.Date(2026, 12, 2, 3, 4, 5, 0, time.UTC)

	for _, id := range []string{"AAAA-1111", "AAAA-1111"} {
		if aside, err := Moved(dir, id, now); err != nil || aside != "" {
			t.Fatalf("on the machine it was made on: %q %v", aside, err)
		}
	}
	if excl := BackupExclusions(dir); len(excl) != len(IdentityFiles) {
		t.Errorf("backup exclusions %v, want every identity file", excl)
	}
	aside, err := Moved(dir, "BBBB-2222", now)
	if err != nil || filepath.Base(aside) != "moved-from-AAAA-1111-20261202T030405Z" {
		t.Fatalf("moved: %q %v", aside, err)
	}
	for _, f := range IdentityFiles {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("%s is still in the folder after a move", f)
		}
		if _, err := os.Stat(filepath.Join(aside, f)); err != nil {
			t.Errorf("%s was not set aside: %v", f, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(aside, TailnetDir, "tailscaled.state")); string(b) != "node key" {
		t.Error("the tailnet state was not kept whole")
	}
	for _, f := range []string{JournalFile, ConfigFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s did not stay: %v", f, err)
		}
	}
	if aside, err := Moved(dir, "BBBB-2222", now.Add(time.Hour)); err != nil || aside != "" {
		t.Fatalf("the next start on the new machine: %q %v", aside, err)
	}
	if aside, err := Moved(t.TempDir(), "", now); err != nil || aside != "" {
		t.Fatalf("unknown hardware: %q %v", aside, err)
	}
}

// TestPlatformUUID reads ioreg's output as a Mac prints it.
func TestPlatformUUID(t *testing.T) {
	out := []byte(`+-o J314sAP  <class IOPlatformExpertDevice, id 0x100000206, registered, matched, active, busy 0 (6 ms), retain 31>
    {
      "IOPolledInterface" = "AppleARMWatchdogTimerHibernateHandler is not serializable"
      "IOPlatformSerialNumber" = "C02XXXXXXXXX"
      "IOPlatformUUID" = "4c4c4544-0039-4d10-8048-b2c04f4e3633"
      "model" = <"MacBookPro18,3">
    }
`)
	if got := PlatformUUID(out); got != "4C4C4544-0039-4D10-8048-B2C04F4E3633" {
		t.Errorf("PlatformUUID = %q", got)
	}
	if got := PlatformUUID([]byte("no such key")); got != "" {
		t.Errorf("PlatformUUID of nothing = %q", got)
	}
	if !slices.Contains(IdentityFiles, TailnetDir) {
		t.Error("the tailnet's state is not an identity file")
	}
}
