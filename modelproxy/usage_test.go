package modelproxy

import (
	"strconv"
	"strings"
	"testing"
)

const sampleStream = "event: message_start\r\n" +
	`data: {"type":"message_start","message":{"usage":{"input_tokens":120,"cache_read_input_tokens":30,"cache_creation_input_tokens":5,"output_tokens":1}}}` + "\r\n\r\n" +
	": keep-alive\n\n" +
	"event: ping\ndata: {\"type\":\"ping\"}\n\n" +
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"usage \\\"usage\\\" in text\"}}\n\n" +
	"event: message_delta\n" +
	`data: {"type":"message_delta","usage":{"output_tokens":12}}` + "\n\n" +
	"event: message_delta\n" +
	`data: {"type":"message_delta","usage":{"output_tokens":57}}` + "\n\n" +
	"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"

var sampleWant = counts{Input: 120, CacheRead: 30, CacheCreation: 5, Output: 57}

func TestSSEUsageChunking(t *testing.T) {
	for _, size := range []int{1, 2, 3, 7, 64, len(sampleStream)} {
		t.Run(strconv.Itoa(size), func(t *testing.T) {
			var s sseUsage
			for b := []byte(sampleStream); len(b) > 0; {
				n := min(size, len(b))
				s.Write(b[:n])
				b = b[n:]
			}
			s.Close()
			if s.total != sampleWant {
				t.Fatalf("chunks of %d: %+v, want %+v", size, s.total, sampleWant)
			}
		})
	}
}

func TestSSEUsageEdges(t *testing.T) {
	long := "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"usage\":\"" + strings.Repeat("u", maxSSELine+10) + "\"}\n\n"
	cases := []struct {
		name    string
		stream  string
		want    counts
		errType string
	}{
		{"no final blank line", `data: {"type":"message_start","message":{"usage":{"input_tokens":9}}}`, counts{Input: 9}, ""},
		{"over-long line skipped, later events counted", long + sampleStream, sampleWant, ""},
		{"data lines with no blank line skipped, later events counted",
			strings.Repeat(`data: {"type":"message_delta","usage":{"output_tokens":999}}`+"\n", 3*maxSSELine/60) + "\n" + sampleStream, sampleWant, ""},
		{"malformed JSON ignored", "data: {\"type\":\"message_start\",\"usage\n\n" + sampleStream, sampleWant, ""},
		{"in-stream error event", "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n", counts{}, "overloaded_error"},
		{"delta before start does not double count",
			`data: {"type":"message_delta","usage":{"input_tokens":50,"output_tokens":5}}` + "\n\n" +
				`data: {"type":"message_start","message":{"usage":{"input_tokens":50,"output_tokens":1}}}` + "\n\n",
			counts{Input: 50, Output: 5}, ""},
		{"multi-line data", "event: message_delta\ndata: {\"type\":\"message_delta\",\ndata: \"usage\":{\"output_tokens\":8}}\n\n", counts{Output: 8}, ""},
		{"reasoning tokens variant", `data: {"type":"message_delta","usage":{"output_tokens":20,"reasoning_tokens":11}}` + "\n\n", counts{Output: 20, Thinking: 11}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var s sseUsage
			s.Write([]byte(c.stream))
			s.Close()
			if s.total != c.want || s.errType != c.errType {
				t.Fatalf("got %+v %q, want %+v %q", s.total, s.errType, c.want, c.errType)
			}
			if len(s.line) > maxSSELine+1 || cap(s.data) > 2*maxSSELine {
				t.Fatalf("buffers grew unbounded: line %d data %d", len(s.line), cap(s.data))
			}
		})
	}
}

func TestMessageUsage(t *testing.T) {
	got, model := messageUsage([]byte(`{"type":"message","model":"deepseek-v4-pro","usage":{"input_tokens":3,"cache_read_input_tokens":4,"output_tokens":5,"output_tokens_details":{"thinking_tokens":2}}}`))
	if want := (counts{Input: 3, CacheRead: 4, Output: 5, Thinking: 2}); got != want || model != "deepseek-v4-pro" {
		t.Fatalf("%+v %q, want %+v and the answer's model", got, model, want)
	}
	if got, model := messageUsage([]byte("not json")); !got.zero() || model != "" {
		t.Fatalf("garbage gave %+v", got)
	}
}

func TestUSDFormat(t *testing.T) {
	for v, want := range map[float64]string{1: "1.00", 0.25: "0.25", 1.0213: "1.02", 0.0196: "0.0196", 0.001: "0.001", 0: "0.00", 0.000001: "0.000001"} {
		if got := usd(v); got != want {
			t.Errorf("usd(%v) = %q, want %q", v, got, want)
		}
	}
}

// FuzzSSEUsage: any bytes, split anywhere, give the same totals as fed whole,
// and never panic.
func FuzzSSEUsage(f *testing.F) {
	f.Add([]byte(sampleStream), uint(5))
	f.Add([]byte("data: {\"type\":\"message_start\"\n\n\r\n"), uint(1))
	f.Fuzz(func(t *testing.T, b []byte, split uint) {
		var whole, parts sseUsage
		whole.Write(b)
		whole.Close()
		i := int(split % uint(len(b)+1))
		parts.Write(b[:i])
		parts.Write(b[i:])
		parts.Close()
		if whole.total != parts.total {
			t.Fatalf("split at %d changed the totals: %+v vs %+v", i, whole.total, parts.total)
		}
	})
}
