package bridge_test

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// `make release`'s script, for this machine's target only, into a temp dir:
// SHA256SUMS names the archive with its real hash, and the binaries in it
// print the version the script was given.
func TestReleaseArchive(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries: not under -short")
	}
	out := t.TempDir()
	const version = "v0.0.0-releasetest"
	target := runtime.GOOS + "/" + runtime.GOARCH
	cmd := exec.Command("scripts/release.sh", version, out, target)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/release.sh: %v\n%s", err, b)
	}
	name := "deepseek-mcp-bridge_" + version + "_" + runtime.GOOS + "_" + runtime.GOARCH
	archive := filepath.Join(out, name+".tar.gz")

	sums, err := os.ReadFile(filepath.Join(out, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256(b)
	if want := hex.EncodeToString(h[:]) + "  " + name + ".tar.gz\n"; string(sums) != want {
		t.Errorf("SHA256SUMS = %q, want %q", sums, want)
	}

	bin := filepath.Join(t.TempDir(), "bin")
	got := untar(t, archive, bin)
	for _, f := range []string{"bridge", "bridgectl", "README.md", "README.zh-CN.md", "LICENSE"} {
		if !got[name+"/"+f] {
			t.Errorf("the archive lacks %s/%s (has %v)", name, f, got)
		}
	}
	for _, c := range []string{"bridge", "bridgectl"} {
		b, err := exec.Command(filepath.Join(bin, name, c), "--version").Output()
		if err != nil || string(b) != c+" "+version+"\n" {
			t.Errorf("%s --version = %q, %v; want %q", c, b, err, c+" "+version+"\n")
		}
	}
}

// untar unpacks a .tar.gz into dir and returns the names of its files.
func untar(t *testing.T, archive, dir string) map[string]bool {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(bufio.NewReader(f))
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	tr := tar.NewReader(zr)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return names
		}
		if err != nil {
			t.Fatal(err)
		}
		if hdr.Typeflag != tar.TypeReg || strings.Contains(hdr.Name, "..") {
			continue
		}
		names[hdr.Name] = true
		p := filepath.Join(dir, hdr.Name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		w, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(hdr.Mode)&0o755)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(w, tr); err != nil {
			t.Fatal(err)
		}
		w.Close()
	}
}
