package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
)

var enableCmd = &Command{
	Name:  "enable",
	Usage: "enable",
	Short: "allow `bridgectl start` again after `bridgectl disable`",
	Long:  `Removes the disabled flag (<state>/disabled). It does not start anything: run ` + "`bridgectl start`" + ` next.`,
	Run:   runEnable,
}

func runEnable(ctx context.Context, e *Env, args []string) error {
	c, err := parseAndLoad(e, args, false)
	if err != nil {
		return err
	}
	err = os.Remove(c.dir.DisabledFlag())
	switch {
	case errors.Is(err, os.ErrNotExist):
		fmt.Fprintln(e.Stdout, "already enabled")
	case err != nil:
		return err
	default:
		fmt.Fprintln(e.Stdout, "enabled: `bridgectl start` to run it")
	}
	return nil
}
