package ids

import "testing"

func TestNewIsValidAndFresh(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		id, err := New()
		if err != nil {
			t.Fatal(err)
		}
		if !Valid(id) || !ValidPrefix(id) || len(id) != 32 {
			t.Fatalf("New() = %q: not valid", id)
		}
		if seen[id] {
			t.Fatalf("New() repeated %q", id)
		}
		seen[id] = true
	}
}

func TestValid(t *testing.T) {
	for _, tc := range []struct {
		in            string
		valid, prefix bool
	}{
		{"0123456789abcdef0123456789abcdef", true, true},
		{"0123456789ABCDEF0123456789abcdef", false, false},
		{"0123456789abcdef0123456789abcde", false, true},
		{"0123456789abcdef0123456789abcdef0", false, false},
		{"01234567", false, true},
		{"0123456", false, false},
		{"../../etc/passwd", false, false},
		{"0123456g", false, false},
		{"", false, false},
	} {
		if got := Valid(tc.in); got != tc.valid {
			t.Errorf("Valid(%q) = %v, want %v", tc.in, got, tc.valid)
		}
		if got := ValidPrefix(tc.in); got != tc.prefix {
			t.Errorf("ValidPrefix(%q) = %v, want %v", tc.in, got, tc.prefix)
		}
	}
}
