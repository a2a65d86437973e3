package envfile

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/joho/godotenv"
)

func TestUpdate(t *testing.T) {
	tests := []struct {
		name, in, key, value, want string
	}{
		{
			name: "keeps comments, blanks and unknown lines",
			in:   "# DeepSeek bridge\n\nDEEPSEEK_API_KEY=sk-test-double-key\n# the secret:\nMCP_PATH_SECRET=old-secret-0123456789\nSOMETHING_ELSE=kept # why\n",
			key:  "MCP_PATH_SECRET", value: "test-secret-0123456789abcdef",
			want: "# DeepSeek bridge\n\nDEEPSEEK_API_KEY=sk-test-double-key\n# the secret:\nMCP_PATH_SECRET=test-secret-0123456789abcdef\nSOMETHING_ELSE=kept # why\n",
		},
		{
			name: "appends a missing key",
			in:   "# only a comment\nPORT=8787\n",
			key:  "MCP_PATH_SECRET", value: "abc0123456789def",
			want: "# only a comment\nPORT=8787\nMCP_PATH_SECRET=abc0123456789def\n",
		},
		{
			name: "uncomments the commented example instead of appending",
			in:   "# roots a job's workspace must lie in\n# DEEPSEEK_ALLOWED_ROOTS=\nPORT=8787\n",
			key:  "DEEPSEEK_ALLOWED_ROOTS", value: "/home/me/code",
			want: "# roots a job's workspace must lie in\nDEEPSEEK_ALLOWED_ROOTS=/home/me/code\nPORT=8787\n",
		},
		{
			name: "an assignment wins over a commented example",
			in:   "#DEEPSEEK_ALLOWED_ROOTS=/old/example\nDEEPSEEK_ALLOWED_ROOTS=/srv\n",
			key:  "DEEPSEEK_ALLOWED_ROOTS", value: "/srv:/home/me/code",
			want: "#DEEPSEEK_ALLOWED_ROOTS=/old/example\nDEEPSEEK_ALLOWED_ROOTS=/srv:/home/me/code\n",
		},
		{
			name: "prose naming the key is no example",
			in:   "# set DEEPSEEK_ALLOWED_ROOTS= to allow jobs\n",
			key:  "DEEPSEEK_ALLOWED_ROOTS", value: "/srv",
			want: "# set DEEPSEEK_ALLOWED_ROOTS= to allow jobs\nDEEPSEEK_ALLOWED_ROOTS=/srv\n",
		},
		{
			name: "appends after a last line without newline",
			in:   "PORT=8787",
			key:  "HOST", value: "127.0.0.1",
			want: "PORT=8787\nHOST=127.0.0.1\n",
		},
		{
			name: "empty file",
			in:   "",
			key:  "HOST", value: "127.0.0.1",
			want: "HOST=127.0.0.1\n",
		},
		{
			name: "keeps export, indentation, spacing and trailing comment",
			in:   "  export MCP_PATH_SECRET = \"old value\"   # rotate me\nX=1\n",
			key:  "MCP_PATH_SECRET", value: "new0123456789abcdef",
			want: "  export MCP_PATH_SECRET = new0123456789abcdef   # rotate me\nX=1\n",
		},
		{
			name: "prefix of another name is not touched",
			in:   "MCP_PATH_SECRET_OLD=x\nMCP_PATH_SECRET=y\n",
			key:  "MCP_PATH_SECRET", value: "z0123456789abcdef",
			want: "MCP_PATH_SECRET_OLD=x\nMCP_PATH_SECRET=z0123456789abcdef\n",
		},
		{
			name: "CRLF file stays CRLF",
			in:   "# c\r\nPORT=1\r\n",
			key:  "HOST", value: "127.0.0.1",
			want: "# c\r\nPORT=1\r\nHOST=127.0.0.1\r\n",
		},
		{
			name: "CRLF line rewritten in place",
			in:   "PORT=1\r\nHOST=0.0.0.0\r\n",
			key:  "HOST", value: "127.0.0.1",
			want: "PORT=1\r\nHOST=127.0.0.1\r\n",
		},
		{
			name: "value needing quotes",
			in:   "A=1\n",
			key:  "DEEPSEEK_ALLOWED_ROOTS", value: `/srv/my work:/srv/$x`,
			want: "A=1\nDEEPSEEK_ALLOWED_ROOTS=\"/srv/my work:/srv/\\$x\"\n",
		},
		{
			name: "a line inside another multi-line quoted value is not an assignment",
			in:   "MULTI=\"line one\nMCP_PATH_SECRET=inside \\\" quote\nline three\" # c\nMCP_PATH_SECRET=old0123456789abcdef\n",
			key:  "MCP_PATH_SECRET", value: "new0123456789abcdef",
			want: "MULTI=\"line one\nMCP_PATH_SECRET=inside \\\" quote\nline three\" # c\nMCP_PATH_SECRET=new0123456789abcdef\n",
		},
		{
			name: "the key's own multi-line value is replaced whole",
			in:   "A=1\nMCP_PATH_SECRET='old\nMORE=x\nend'\nB=2\n",
			key:  "MCP_PATH_SECRET", value: "new0123456789abcdef",
			want: "A=1\nMCP_PATH_SECRET=new0123456789abcdef\nB=2\n",
		},
		{
			name: "empty value",
			in:   "DEEPSEEK_ALLOWED_ROOTS=/srv/a\n",
			key:  "DEEPSEEK_ALLOWED_ROOTS", value: "",
			want: "DEEPSEEK_ALLOWED_ROOTS=\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(Update([]byte(tt.in), tt.key, tt.value))
			if got != tt.want {
				t.Fatalf("Update:\n got %q\nwant %q", got, tt.want)
			}
			// The reader the bridge uses agrees: key has the new value, every
			// other variable keeps the value it had.
			before, err1 := godotenv.Unmarshal(tt.in)
			after, err2 := godotenv.Unmarshal(got)
			if err1 != nil || err2 != nil {
				t.Fatalf("godotenv: %v / %v", err1, err2)
			}
			if after[tt.key] != tt.value {
				t.Errorf("godotenv reads %s=%q, want %q", tt.key, after[tt.key], tt.value)
			}
			for k, v := range before {
				if k != tt.key && after[k] != v {
					t.Errorf("godotenv reads %s=%q after the update, was %q", k, after[k], v)
				}
			}
		})
	}
}

// What Set writes, godotenv (the reader config.Load uses) reads back unchanged.
func TestQuoteRoundTrip(t *testing.T) {
	for _, v := range []string{
		"plain", "test-secret-0123456789abcdef", "/srv/a:/srv/b", "with space", `C:\Users\me\work`,
		`a"b`, "a'b", "a#b", "a $HOME b", "${HOME}", "x=y", "",
	} {
		t.Run(v, func(t *testing.T) {
			data := Update([]byte("# keep\n"), "K", v)
			got, err := godotenv.UnmarshalBytes(data)
			if err != nil {
				t.Fatalf("godotenv cannot read %q: %v", data, err)
			}
			if got["K"] != v {
				t.Fatalf("round trip of %q through %q gave %q", v, data, got["K"])
			}
		})
	}
}

func TestSetFile(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real.env")
	orig := "# my settings\nDEEPSEEK_API_KEY=sk-test-double-key\nUNKNOWN_THING=stays\n\n# end\n"
	if err := os.WriteFile(real, []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, ".env")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if err := Set(link, "MCP_PATH_SECRET", "test-secret-0123456789abcdef"); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(link)
	if err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the symlink was replaced: %v %v", fi.Mode(), err)
	}
	got, _ := os.ReadFile(real)
	want := orig + "MCP_PATH_SECRET=test-secret-0123456789abcdef\n"
	if string(got) != want {
		t.Fatalf("file:\n got %q\nwant %q", got, want)
	}
	st, _ := os.Stat(real)
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600", st.Mode().Perm())
	}

	fresh := filepath.Join(dir, "new", "x.env")
	if err := Set(fresh, "HOST", "127.0.0.1"); err == nil {
		t.Fatal("Set into a missing directory succeeded")
	}
	fresh = filepath.Join(dir, "fresh.env")
	if err := Set(fresh, "HOST", "127.0.0.1"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(fresh); string(b) != "HOST=127.0.0.1\n" {
		t.Fatalf("fresh file %q", b)
	}
	if err := Set(fresh, "BAD KEY", "x"); err == nil {
		t.Fatal("invalid key accepted")
	}
}
