package statedir

import (
	"bufio"
	"errors"
	"io"
)

// EachLine calls fn with every newline-ended line of r, without its newline.
// A line longer than max is not held whole: fn gets its first max bytes with
// whole false, and the rest is read past, so one over-long line (a record
// something else wrote) costs max bytes of memory and hides none of the
// lines after it. What follows the last newline (a line still being
// written, or a file's last line without one) is returned as tail, cut to
// max bytes (tailWhole false when cut). err is a read error other than EOF.
func EachLine(r io.Reader, max int, fn func(line []byte, whole bool)) (tail []byte, tailWhole bool, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var line []byte
	whole := true
	for {
		chunk, err := br.ReadSlice('\n')
		switch {
		case len(line)+len(chunk) <= max+1: // +1: the newline
			line = append(line, chunk...)
		case whole:
			line = append(line, chunk[:max-len(line)]...)
			whole = false
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return line, whole, err
		}
		if n := len(line); n > 0 && line[n-1] == '\n' {
			line = line[:n-1]
		}
		fn(line, whole)
		line, whole = line[:0], true
	}
}
