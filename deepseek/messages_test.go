package deepseek

import (
	"errors"
	"strings"
	"testing"
)

func TestFlashMessages(t *testing.T) {
	conv := []Message{{RoleSystem, "Be terse."}, {RoleUser, "hi"}, {RoleAssistant, "hello"}, {RoleUser, "and now?"}}
	msgs, err := flashMessages(FlashRequest{Messages: conv, JSON: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 5 || msgs[0].Role != RoleSystem || !strings.HasSuffix(msgs[0].Content, jsonInstruction) || msgs[4].Content != "and now?" {
		t.Fatalf("messages %+v", msgs)
	}
	msgs, _ = flashMessages(FlashRequest{Messages: conv, Files: "a.go: package a"})
	if last := msgs[len(msgs)-1].Content; !strings.Contains(last, "and now?") || !strings.Contains(last, "a.go: package a") {
		t.Fatalf("files not after the last turn: %q", last)
	}
	for _, bad := range []FlashRequest{
		{},
		{Task: "x", Messages: conv},
		{Messages: []Message{{RoleUser, "hi"}, {RoleAssistant, "hello"}}},
		{Messages: []Message{{"tool", "hi"}}},
		{Messages: []Message{{RoleUser, " \n"}}},
	} {
		if _, err := flashMessages(bad); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("%+v: err %v, want ErrInvalidRequest", bad, err)
		}
	}
}
