package server

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// notifyPump is the session a tool handler sees during an HTTP tools/call:
// the mcp-go session with the notification channel replaced by ours, which
// the call's loop (startCallLoop) writes to the response as it comes.
type notifyPump struct {
	mcpserver.ClientSession
	cs *callStream
	ch chan mcp.JSONRPCNotification
}

const pumpBuffer = 100 // like mcp-go's own session channel; a full one refuses

func newPump(inner mcpserver.ClientSession, cs *callStream) *notifyPump {
	return &notifyPump{ClientSession: inner, cs: cs, ch: make(chan mcp.JSONRPCNotification, pumpBuffer)}
}

func (p *notifyPump) NotificationChannel() chan<- mcp.JSONRPCNotification { return p.ch }

// drain writes every queued notification; a nil pump has none.
func (p *notifyPump) drain() {
	if p == nil {
		return
	}
	for {
		select {
		case n := <-p.ch:
			p.write(n)
		default:
			return
		}
	}
}

func (p *notifyPump) write(n mcp.JSONRPCNotification) {
	p.cs.observe(n)
	b, err := json.Marshal(n)
	if err != nil {
		return
	}
	_ = p.cs.sse.event(b) // a gone client is seen by the handler's ctx
}

// The optional session interfaces, forwarded to the mcp-go session.

func (p *notifyPump) UpgradeToSSEWhenReceiveNotification() {
	if s, ok := p.ClientSession.(mcpserver.SessionWithStreamableHTTPConfig); ok {
		s.UpgradeToSSEWhenReceiveNotification()
	}
}

func (p *notifyPump) SetLogLevel(level mcp.LoggingLevel) {
	if s, ok := p.ClientSession.(mcpserver.SessionWithLogging); ok {
		s.SetLogLevel(level)
	}
}

func (p *notifyPump) GetLogLevel() mcp.LoggingLevel {
	if s, ok := p.ClientSession.(mcpserver.SessionWithLogging); ok {
		return s.GetLogLevel()
	}
	return mcp.LoggingLevelInfo
}

func (p *notifyPump) GetClientInfo() mcp.Implementation {
	if s, ok := p.ClientSession.(mcpserver.SessionWithClientInfo); ok {
		return s.GetClientInfo()
	}
	return mcp.Implementation{}
}

func (p *notifyPump) SetClientInfo(info mcp.Implementation) {
	if s, ok := p.ClientSession.(mcpserver.SessionWithClientInfo); ok {
		s.SetClientInfo(info)
	}
}

func (p *notifyPump) GetClientCapabilities() mcp.ClientCapabilities {
	if s, ok := p.ClientSession.(mcpserver.SessionWithClientInfo); ok {
		return s.GetClientCapabilities()
	}
	return mcp.ClientCapabilities{}
}

func (p *notifyPump) SetClientCapabilities(c mcp.ClientCapabilities) {
	if s, ok := p.ClientSession.(mcpserver.SessionWithClientInfo); ok {
		s.SetClientCapabilities(c)
	}
}

func (p *notifyPump) RequestSampling(ctx context.Context, r mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	if s, ok := p.ClientSession.(mcpserver.SessionWithSampling); ok {
		return s.RequestSampling(ctx, r)
	}
	return nil, fmt.Errorf("the session does not support sampling")
}

func (p *notifyPump) RequestElicitation(ctx context.Context, r mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	if s, ok := p.ClientSession.(mcpserver.SessionWithElicitation); ok {
		return s.RequestElicitation(ctx, r)
	}
	return nil, fmt.Errorf("the session does not support elicitation")
}

func (p *notifyPump) ListRoots(ctx context.Context, r mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	if s, ok := p.ClientSession.(mcpserver.SessionWithRoots); ok {
		return s.ListRoots(ctx, r)
	}
	return nil, fmt.Errorf("the session does not support roots")
}

var (
	_ mcpserver.SessionWithStreamableHTTPConfig = (*notifyPump)(nil)
	_ mcpserver.SessionWithLogging              = (*notifyPump)(nil)
	_ mcpserver.SessionWithClientInfo           = (*notifyPump)(nil)
	_ mcpserver.SessionWithSampling             = (*notifyPump)(nil)
	_ mcpserver.SessionWithElicitation          = (*notifyPump)(nil)
	_ mcpserver.SessionWithRoots                = (*notifyPump)(nil)
)
