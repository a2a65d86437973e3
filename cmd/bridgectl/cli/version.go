package cli

import (
	"context"
	"fmt"
)

// Version is bridgectl's version. Main sets it from the same build-time
// variable as the daemon's `bridge version`: -ldflags "-X main.version=v1.2.3".
var Version = "dev"

var versionCmd = &Command{
	Name:  "version",
	Usage: "version",
	Short: "print bridgectl's version (also: bridgectl --version)",
	Long: `Prints "bridgectl VERSION". The version comes from the build
(-ldflags "-X main.version=v1.2.3", the same variable ` + "`bridge version`" + ` prints); a plain
go build says "dev".`,
	Run: runVersion,
}

func runVersion(ctx context.Context, e *Env, args []string) error {
	f := newFlags(e, false)
	pos, err := f.parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError{"version takes no arguments"}
	}
	fmt.Fprintf(e.Stdout, "bridgectl %s\n", Version)
	return nil
}
