package statedir

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"time"

	"github.com/delta-roads/delta/gateway/net/pintls"
)

// MachineFile holds the hardware id of the computer the state folder's
// identity was made on (MachineID).
const MachineFile = "machine"

// IdentityFiles are what make this computer itself to its peers: the
// tailnet node's keys, the ticket key, static mode's node id and the lan
// road's TLS key and certificate. A Time Machine restore or Migration
// Assistant copies them onto another Mac, which would then be the same
// node as the first (MACOS.md §2.9): they are kept out of backups
// (BackupExclusions) and set aside when the folder has moved (Moved).
var IdentityFiles = []string{TailnetDir, TicketKeyFile, NodeIDFile, pintls.KeyFile, pintls.CertFile}

// Moved compares the machine the state folder in dir was made on with
// this one (id, from MachineID). The first time it records id and reports
// false. When they differ, the folder came from another computer: each of
// IdentityFiles present is moved into a folder "moved-from-<old id>-<time>"
// inside dir (nothing is deleted; the journal, the config and the logs
// stay), the new id is recorded, and it returns that folder, so that Delta
// starts as a new node and says so. An empty id (unknown hardware) checks
// nothing.
func Moved(dir, id string, now time.Time) (aside string, err error) {
	if id == "" {
		return "", nil
	}
	path := filepath.Join(dir, MachineFile)
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", writeFileAtomic(path, []byte(id+"\n"))
	case err != nil:
		return "", fmt.Errorf("statedir: read %s: %w", path, err)
	}
	old := strings.TrimSpace(string(b))
	if old == id {
		return "", nil
	}
	aside = filepath.Join(dir, fmt.Sprintf("moved-from-%s-%s", safeName(old), now.UTC().Format("20060102T150405Z")))
	if err := os.MkdirAll(aside, 0o700); err != nil {
		return "", fmt.Errorf("statedir: a folder for the moved identity: %w", err)
	}
	for _, f := range IdentityFiles {
		err := os.Rename(filepath.Join(dir, f), filepath.Join(aside, f))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("statedir: set aside %s of the computer this folder came from: %w", f, err)
		}
	}
	// Recorded last: a crash before this point moves what is left next time.
	return aside, writeFileAtomic(path, []byte(id+"\n"))
}

func writeFileAtomic(path string, b []byte) error {
	if err := WriteDurable(path, path+".tmp", b); err != nil {
		return fmt.Errorf("statedir: write %s: %w", path, err)
	}
	return nil
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9-]`)

func safeName(s string) string {
	s = unsafeChars.ReplaceAllString(s, "_")
	if len(s) > 40 {
		s = s[:40]
	}
	return s
}

// MachineID is this computer's hardware id on macOS, the IOPlatformUUID
// (ioreg's IOPlatformExpertDevice), which a restored backup or a migration
// does not carry. Elsewhere "" (Moved checks nothing): Linux's
// /etc/machine-id is made anew on some systems at every boot, and would
// cost a computer its identity each time.
func MachineID() string {
	if runtime.GOOS != "darwin" {
		return ""
	}
	out, err := exec.Command("/usr/sbin/ioreg", "-rd1", "-c", "IOPlatformExpertDevice").Output()
	if err != nil {
		return ""
	}
	return PlatformUUID(out)
}

var platformUUID = regexp.MustCompile(`"IOPlatformUUID" = "([0-9A-Fa-f-]+)"`)

// PlatformUUID reads the IOPlatformUUID from ioreg's output.
func PlatformUUID(ioreg []byte) string {
	m := platformUUID.FindSubmatch(ioreg)
	if m == nil {
		return ""
	}
	return string(bytes.ToUpper(m[1]))
}

// BackupExclusions are the paths in dir that are kept out of Time Machine
// (and so out of a Migration Assistant restore from it): IdentityFiles
// that exist.
func BackupExclusions(dir string) []string {
	var out []string
	for _, f := range IdentityFiles {
		p := filepath.Join(dir, f)
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// ExcludeFromBackups keeps each path out of Time Machine with tmutil
// addexclusion (a sticky exclusion: the item's own
// com.apple.metadata:com_apple_backup_excludeItem attribute, kept when it
// is moved). macOS only; elsewhere nothing.
func ExcludeFromBackups(paths []string) error {
	if runtime.GOOS != "darwin" || len(paths) == 0 {
		return nil
	}
	out, err := exec.Command("/usr/bin/tmutil", append([]string{"addexclusion"}, paths...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("tmutil addexclusion: %v: %s", err, bytes.TrimSpace(out))
	}
	return nil
}
