package syncbuf

import (
	"strings"
	"sync"
	"testing"
)

func TestConcurrentWrites(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				b.Write([]byte("ab\n"))
			}
		})
	}
	wg.Wait()
	if b.Len() != 8*100*3 || strings.Count(b.String(), "ab\n") != 800 {
		t.Fatalf("got %d bytes, %d lines", b.Len(), strings.Count(b.String(), "ab\n"))
	}
}
