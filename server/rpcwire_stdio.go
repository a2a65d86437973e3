package server

import (
	"bufio"
	"bytes"
	"io"
	"sync"
)

// maxStdioSwaps bounds how many swapped ids a stdio session remembers; the
// oldest are forgotten first (their answers are long written).
const maxStdioSwaps = 4096

// ExactIDsStdio wraps the stdin and stdout of `bridge stdio` so that
// JSON-RPC ids and progress tokens come back byte for byte, as exactIDs
// does for HTTP: each line read is one message, and mcp-go's stdio server
// writes each answer or notification in one Write.
func ExactIDsStdio(in io.Reader, out io.Writer) (io.Reader, io.Writer) {
	s := &stdioSwaps{}
	pr, pw := io.Pipe()
	go s.pump(in, pw) // owner: the stdio session; ends with in
	return pr, &stdioRestorer{w: out, s: s}
}

type stdioSwaps struct {
	mu    sync.Mutex
	swaps []idSwap
}

func (s *stdioSwaps) pump(in io.Reader, pw *io.PipeWriter) {
	br := bufio.NewReaderSize(in, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			body, swaps := exactIDs(bytes.TrimRight(line, "\r\n"))
			if swaps != nil {
				s.mu.Lock()
				s.swaps = append(s.swaps, swaps...)
				if over := len(s.swaps) - maxStdioSwaps; over > 0 {
					s.swaps = append(s.swaps[:0], s.swaps[over:]...)
				}
				s.mu.Unlock()
				line = append(bytes.TrimRight(body, "\n"), '\n')
			}
			if _, werr := pw.Write(line); werr != nil {
				return
			}
		}
		if err != nil {
			pw.CloseWithError(err)
			return
		}
	}
}

type stdioRestorer struct {
	w io.Writer
	s *stdioSwaps
}

func (r *stdioRestorer) Write(p []byte) (int, error) {
	out := p
	r.s.mu.Lock()
	for _, sw := range r.s.swaps {
		if bytes.Contains(out, sw.stand) {
			out = bytes.ReplaceAll(out, sw.stand, sw.literal)
		}
	}
	r.s.mu.Unlock()
	if _, err := r.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}
