// Package ids makes and checks the random identifiers of jobs and approval
// requests: 32 lowercase hex characters from crypto/rand, which can never name
// another file, and the unique prefixes a person may type for them.
package ids

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
)

// Bytes is the entropy of an id: 128 bits.
const Bytes = 16

// MinPrefix is the shortest prefix a person may type for an id.
const MinPrefix = 8

// New returns a fresh id.
func New() (string, error) {
	return Hex(Bytes)
}

// Hex returns n random bytes as 2n lowercase hex characters.
func Hex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random id: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// Valid reports whether id is exactly what New makes.
func Valid(id string) bool {
	return len(id) == 2*Bytes && lowerHex(id)
}

// ValidPrefix reports whether s could be a prefix a person typed for an id:
// MinPrefix to 2*Bytes lowercase hex characters (a whole id is one too).
func ValidPrefix(s string) bool {
	return len(s) >= MinPrefix && len(s) <= 2*Bytes && lowerHex(s)
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
