package cmdline

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/shardmesh/shardmesh/internal/version"
)

// Version describes the build: the release stamped into it (internal/version; else the
// module version, or "devel"), the source revision when the build recorded one, and the Go
// version and platform.
func Version() string {
	b := build()
	parts := []string{b.Version}
	if b.Commit != "" {
		parts = append(parts, "commit "+b.Commit)
	}
	return strings.Join(append(parts, b.Go, b.OS+"/"+b.Arch), ", ")
}

// buildInfo is what Version tells, and version --json.
type buildInfo struct {
	Program string `json:"program"`
	Version string `json:"version"`
	Commit  string `json:"commit,omitempty"` // empty: the build recorded no revision
	Go      string `json:"go"`
	OS      string `json:"os"`
	Arch    string `json:"arch"`
	date    string // the commit's date, 2006-01-02, when the build recorded one (man pages)
}

func build() buildInfo {
	b := buildInfo{Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	if version.Version != "dev" {
		b.Version = version.Version
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		if b.Version == "" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			b.Version = info.Main.Version
		}
		dirty := false
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				b.Commit = s.Value[:min(len(s.Value), 12)]
			case "vcs.time":
				b.date, _, _ = strings.Cut(s.Value, "T")
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if dirty && b.Commit != "" {
			b.Commit += "+dirty"
		}
	}
	if b.Version == "" {
		b.Version = "devel"
	}
	return b
}

func versionCommand() *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "print the version (also --version)",
		Description: `Prints the release (or "devel" for a build from source), the source revision when the
build recorded one, the Go version and the platform.
Example:
   shardctl version
   sharddaemon version --json`,
		Flags: []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print JSON"}},
		Action: func(c *cli.Context) error {
			if _, err := Positional(c, "", 0); err != nil {
				return err
			}
			if c.Bool("json") {
				b := build()
				b.Program = c.App.Name
				return PrintJSON(c.App.Writer, b)
			}
			fmt.Fprintln(c.App.Writer, c.App.Name, Version())
			return nil
		},
	}
}
