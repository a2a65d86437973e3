package deepseek

import (
	"bufio"
	"bytes"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

func TestReadAPIError(t *testing.T) {
	t.Parallel()
	future := time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
	cases := []struct {
		name       string
		status     int
		retryAfter string
		body       string
		sentinel   error
		retryMin   int
		retryMax   int
		text       []string
	}{
		{"429 seconds", 429, "12", `{"error":{"message":"slow down","type":"rate_limit_error","param":null,"code":"invalid_request_error"}}`,
			ErrRateLimited, 12, 12, []string{"(429): slow down", "try again"}},
		{"503 http-date", 503, future, `{"error":{"message":"busy"}}`, ErrUpstream, 85, 91, []string{"overloaded (503): busy"}},
		{"502 html from a proxy", 502, "", "<html>" + strings.Repeat("x", 1000) + "</html>", ErrUpstream, 0, 0, []string{"HTTP 502: <html>xxx", "…"}},
		{"404 wrong base", 404, "", "", ErrBadRequest, 0, 0, []string{"check DEEPSEEK_BASE_URL", "without /v1", "no error message"}},
		{"403", 403, "", `{"error":{"message":"region not supported"}}`, ErrBadRequest, 0, 0, []string{"HTTP 403", "region not supported"}},
		{"garbage Retry-After", 429, "soon", "", ErrRateLimited, 0, 0, []string{"(429)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := &http.Response{StatusCode: tc.status, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(tc.body))}
			if tc.retryAfter != "" {
				resp.Header.Set("Retry-After", tc.retryAfter)
			}
			err := readAPIError(resp)
			var apiErr *APIError
			if !errors.Is(err, tc.sentinel) || !errors.As(err, &apiErr) || apiErr.Status != tc.status {
				t.Fatalf("err = %v (%T), want %v with status %d", err, err, tc.sentinel, tc.status)
			}
			if apiErr.RetryAfterSeconds < tc.retryMin || apiErr.RetryAfterSeconds > tc.retryMax {
				t.Errorf("RetryAfterSeconds %d, want %d..%d", apiErr.RetryAfterSeconds, tc.retryMin, tc.retryMax)
			}
			for _, want := range tc.text {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
		})
	}
}

func TestReadStream(t *testing.T) {
	t.Parallel()
	chunk := func(delta string) string {
		return `data: {"model":"deepseek-flash","choices":[{"delta":` + delta + `,"finish_reason":null}]}` + "\n\n"
	}
	final := `data: {"choices":[{"delta":{"content":""},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5,"prompt_cache_hit_tokens":1,"prompt_cache_miss_tokens":2,"completion_tokens_details":{"reasoning_tokens":1}}}` + "\n\n"
	cases := []struct {
		name, stream    string
		answer, finish  string
		err             error
		wantUsage       Usage
		wantToolCallArg string
	}{
		{name: "multi-line data field", answer: "ml", finish: "stop",
			stream: "data: {\"choices\":\ndata: [{\"delta\":{\"content\":\"ml\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"},
		{name: "crlf and comments", answer: "hello", finish: "stop",
			stream:    ": keep-alive\r\n\r\nevent: ignored\r\n" + strings.ReplaceAll(chunk(`{"reasoning_content":"r"}`), "\n", "\r\n") + chunk(`{"content":"hel"}`) + chunk(`{"content":"lo"}`) + final + "data: [DONE]\n\n",
			wantUsage: Usage{PromptTokens: 3, CompletionTokens: 2, TotalTokens: 5, CacheHitTokens: 1, CacheMissTokens: 2, ReasoningTokens: 1}},
		{name: "finish without [DONE] is complete", answer: "a", finish: "stop", stream: chunk(`{"content":"a"}`) + final,
			wantUsage: Usage{PromptTokens: 3, CompletionTokens: 2, TotalTokens: 5, CacheHitTokens: 1, CacheMissTokens: 2, ReasoningTokens: 1}},
		{name: "no finish and no [DONE] is a cut", stream: chunk(`{"content":"a"}`), err: ErrUpstream},
		{name: "error object inside the stream", stream: chunk(`{"content":"a"}`) + `data: {"error":{"message":"overloaded"}}` + "\n\n", err: ErrUpstream},
		{name: "tool call index out of range", stream: chunk(`{"tool_calls":[{"index":100000,"function":{"name":"x"}}]}`), err: ErrUpstream},
		{name: "tool call pieces", finish: "tool_calls", wantToolCallArg: `{"a":1}`,
			stream: chunk(`{"content":null,"tool_calls":[{"index":0,"id":"c1","function":{"name":"f","arguments":""}}]}`) +
				chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\""}}]}`) +
				chunk(`{"tool_calls":[{"index":0,"function":{"arguments":":1}"}}]}`) +
				`data: {"choices":[{"delta":{},"finish_reason":"tool_calls"}]}` + "\n\ndata: [DONE]\n\n"},
		{name: "line over the limit", stream: "data: " + strings.Repeat("x", eventCap(0)+10) + "\n\n", err: ErrOverOutputCap},
		{name: "event over the limit", stream: strings.Repeat("data: "+strings.Repeat("x", 1000)+"\n", eventCap(0)/1000+1), err: ErrOverOutputCap},
		{name: "tool arguments over the cap", err: ErrOverOutputCap,
			stream: strings.Repeat(chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"`+strings.Repeat("a", 4000)+`"}}]}`), OutputCap(0)/4000+1)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := &turn{}
			err := tr.readStream(strings.NewReader(tc.stream), &progress{})
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err = %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("readStream: %v", err)
			}
			if tr.content.String() != tc.answer || tr.finish != tc.finish || tr.usage != tc.wantUsage {
				t.Errorf("answer %q finish %q usage %+v", tr.content.String(), tr.finish, tr.usage)
			}
			if tc.wantToolCallArg != "" && (len(tr.toolCalls) != 1 || tr.toolCalls[0].Arguments != tc.wantToolCallArg || tr.toolCalls[0].ID != "c1" || tr.toolCalls[0].Name != "f") {
				t.Errorf("tool calls %+v", tr.toolCalls)
			}
		})
	}
}

func FuzzReadStream(f *testing.F) {
	f.Add([]byte(": keep-alive\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"x\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"))
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":3}]}}]}\n\n"))
	f.Add([]byte("data: {\x00\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr := &turn{}
		err := tr.readStream(strings.NewReader(string(data)), &progress{fn: func(ProgressEvent) {}})
		if err != nil && !errors.Is(err, ErrUpstream) {
			t.Fatalf("error outside ErrUpstream: %v", err)
		}
		if len(tr.toolCalls) > maxToolCalls {
			t.Fatalf("%d tool calls", len(tr.toolCalls))
		}
	})
}

// FuzzLineReader: lines come out as splitting the whole input on "\n" gives
// them (a "\r" before the "\n" dropped, the last line kept as it is), however
// the input falls across the reader's buffer — here the smallest bufio
// allows, so most lines take the joining path — up to the first line longer
// than limit, which is errLineTooLong.
func FuzzLineReader(f *testing.F) {
	f.Add([]byte("data: {}\r\n\r\n: ping\n\ndata: [DONE]"), uint(100))
	f.Add([]byte(strings.Repeat("x", 40)+"\r\n"+strings.Repeat("y", 16)+"\n\r"), uint(100))
	f.Add([]byte(strings.Repeat("x", 40)+"\r\n"+strings.Repeat("y", 16)+"\n\r"), uint(40))
	f.Add([]byte(strings.Repeat("x", 41)+"\n"), uint(40))
	f.Fuzz(func(t *testing.T, data []byte, limit uint) {
		limit %= 200
		var want [][]byte
		for i, line := range bytes.Split(data, []byte("\n")) {
			last := i == bytes.Count(data, []byte("\n"))
			if last {
				if len(line) > 0 {
					want = append(want, line)
				}
				break
			}
			want = append(want, bytes.TrimSuffix(line, []byte("\r")))
		}
		tooLong := -1 // index of the first line over limit
		for i, line := range want {
			if len(line) > int(limit) {
				want, tooLong = want[:i], i
				break
			}
		}
		lr := lineReader{br: bufio.NewReaderSize(iotest.HalfReader(bytes.NewReader(data)), 16), max: int(limit)}
		var got [][]byte
		for {
			line, err := lr.next()
			if errors.Is(err, io.EOF) {
				if tooLong >= 0 {
					t.Fatalf("line %d is longer than %d bytes but was read", tooLong, limit)
				}
				break
			}
			if errors.Is(err, errLineTooLong) {
				if len(got) != tooLong {
					t.Fatalf("errLineTooLong at line %d, want it at %d", len(got), tooLong)
				}
				if len(lr.long) > int(limit)+2+2*16 { // the limit plus at most two buffers
					t.Fatalf("the reader held %d bytes for a limit of %d", len(lr.long), limit)
				}
				break
			}
			if err != nil {
				t.Fatalf("line %d: %v", len(got), err)
			}
			got = append(got, bytes.Clone(line))
		}
		if len(got) != len(want) {
			t.Fatalf("%d lines, want %d: %q vs %q", len(got), len(want), got, want)
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("line %d: %q, want %q", i, got[i], want[i])
			}
		}
	})
}

// FuzzChunkDecodeMatchesEncodingJSON: the stream's decoder (decodeChunk)
// accepts exactly the chunks encoding/json accepts and reads the same
// values from them, so changing decoders changed no tolerance.
func FuzzChunkDecodeMatchesEncodingJSON(f *testing.F) {
	for _, s := range []string{
		`{"id":"x","object":"chat.completion.chunk","model":"deepseek-chat","choices":[{"index":0,"delta":{"content":" the"},"logprobs":null,"finish_reason":null}]}`,
		`{"choices":[{"delta":{"reasoning_content":"hm","content":null},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7,"prompt_cache_hit_tokens":1,"prompt_cache_miss_tokens":2,"completion_tokens_details":{"reasoning_tokens":2}}}`,
		`{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"f","arguments":"{\"a\":"}}]}}]}`,
		`{"choices":[{"message":{"content":"whole"},"finish_reason":"length"}]}`,
		`{"error":{"message":"Rate limit","type":"rate_limit","code":429}}`,
		`{"error":{"message":"x","code":"invalid_request_error"}}`,
		`{"Choices":[{"Delta":{"Content":"case"}}],"MODEL":"m"}`,
		`{"choices":[{"delta":{"content":"\ud83d\ude00 \u00e9 \xff"}}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"index":1.5}]}}]}`,
		`{"usage":{"prompt_tokens":1e3}}`,
		`{"choices":null,"usage":null} `,
		`{"model":"a","model":"b"}`,
		`[1]`, `null`, `{"choices":[{"delta":{"content":1}}]}`, `{"a":1}x`, `{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var want, got wireChunk
		wantErr := stdjson.Unmarshal(data, &want)
		gotErr := decodeChunk(data, &got)
		if (wantErr == nil) != (gotErr == nil) {
			t.Fatalf("%q: encoding/json says %v, the stream's decoder %v", data, wantErr, gotErr)
		}
		if wantErr == nil && !reflect.DeepEqual(want, got) {
			t.Fatalf("%q: encoding/json reads %+v, the stream's decoder %+v", data, want, got)
		}
	})
}

// BenchmarkReadStream reads a 400-chunk answer as DeepSeek streams it, with
// the stream's decoder and, for the A/B pair, with encoding/json's.
func BenchmarkReadStream(b *testing.B) {
	var sb strings.Builder
	for i := range 400 {
		fmt.Fprintf(&sb, "data: {\"id\":\"0f3c2b8e-6d1a-4f6e-9d1c-8a2b4c6d8e0f\",\"object\":\"chat.completion.chunk\",\"created\":1733500000,\"model\":\"deepseek-chat\",\"system_fingerprint\":\"fp_3a5770e1b4_prod0820_fp8_kvcache\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" word%d\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n", i)
	}
	sb.WriteString("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\"},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":400,\"total_tokens\":412,\"prompt_cache_hit_tokens\":0,\"prompt_cache_miss_tokens\":12}}\n\ndata: [DONE]\n\n")
	stream := sb.String()
	for _, leg := range []struct {
		name   string
		decode func([]byte, any) error
	}{{"encoding-json", stdjson.Unmarshal}, {"stream-decoder", decodeChunk}} {
		b.Run(leg.name, func(b *testing.B) {
			defer func(d func([]byte, any) error) { decodeChunk = d }(decodeChunk)
			decodeChunk = leg.decode
			b.SetBytes(int64(len(stream)))
			for b.Loop() {
				tr := &turn{maxTokens: 4096}
				if err := tr.readStream(strings.NewReader(stream), &progress{}); err != nil || tr.finish != "stop" {
					b.Fatal(err, tr.finish)
				}
			}
		})
	}
}
