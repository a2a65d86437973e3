package jobs

import (
	"os"
	"strings"
	"testing"
	"time"
)

// A snapshot of a foreign format version never stays `running` forever with
// its harness dir deleted: an unfinished one is marked interrupted in this
// build's format; a finished or unparseable one is left alone with its
// harness dir; a harness dir with no snapshot at all is still removed.
func TestReloadHandlesForeignFormatVersions(t *testing.T) {
	e := newEnv(t, nil)
	running, done, junk, orphan := strings.Repeat("1", 32), strings.Repeat("2", 32), strings.Repeat("3", 32), strings.Repeat("4", 32)
	created := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	files := map[string]string{
		running: `{"version":99,"id":"` + running + `","status":"running","task":"old task","workspace":"/srv/ws","created_at":"2026-11-01T09:00:00Z","new_field":{"x":1}}`,
		done:    `{"version":99,"id":"` + done + `","status":"done","task":"t","nonce":"abc"}`,
		junk:    `{"version":99,"shape":"unknown"}`,
	}
	for id, body := range files {
		if err := os.WriteFile(e.dir.JobFile(id), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{running, done, junk, orphan} {
		if err := os.MkdirAll(e.dir.HarnessDir(id), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	r := e.open()

	s, err := r.Get(running)
	if err != nil || s.Status != StatusInterrupted || s.Task != "old task" || !s.CreatedAt.Equal(created) || s.Partial == nil {
		t.Fatalf("foreign running job = %+v, %v; want interrupted", s, err)
	}
	if d := e.onDisk(running); d.Version != SnapshotVersion || d.Status != StatusInterrupted || d.Nonce != "" {
		t.Errorf("on disk: version %d status %s", d.Version, d.Status)
	}
	for _, id := range []string{done, junk} {
		if b, err := os.ReadFile(e.dir.JobFile(id)); err != nil || string(b) != files[id] {
			t.Errorf("%s: the foreign file was changed: %q %v", id, b, err)
		}
		if _, err := os.Stat(e.dir.HarnessDir(id)); err != nil {
			t.Errorf("%s: harness dir removed: %v", id, err)
		}
		if _, err := r.Get(id); err == nil {
			t.Errorf("%s: a foreign snapshot was adopted", id)
		}
	}
	if _, err := os.Stat(e.dir.HarnessDir(running)); err != nil {
		t.Errorf("the interrupted job's harness dir is gone: %v", err)
	}
	if _, err := os.Stat(e.dir.HarnessDir(orphan)); !os.IsNotExist(err) {
		t.Errorf("orphan harness dir kept: %v", err)
	}
}
