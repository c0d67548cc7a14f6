package check

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/moby/buildkit/client/llb"
	"github.com/moby/buildkit/client/llb/sourceresolver"
	"github.com/moby/buildkit/frontend/dockerfile/dockerfile2llb"
	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/opencontainers/go-digest"
)

// The Dockerfile is parsed by BuildKit's own parser and linted by its DockerfileLint — what
// docker build --check runs — offline; the structure an image needs is asserted on the
// parsed stages. No
// Docker engine runs here, so the build stage's one real step — scripts/release -b — is run
// by TestReleaseBuild instead, and the image's CMD is checked by the daemon itself.

func parseDockerfile(t *testing.T) []instructions.Stage {
	t.Helper()
	res, err := parser.Parse(bytes.NewReader(readFile(t, "Dockerfile")))
	if err != nil {
		t.Fatalf("Dockerfile: %v", err)
	}
	stages, _, err := instructions.Parse(res.AST, nil)
	if err != nil {
		t.Fatalf("Dockerfile: %v", err)
	}
	return stages
}

// lintDockerfile runs what docker build --check runs (BuildKit's DockerfileLint, every
// rule, all stages), with base images resolved offline to an empty configuration.
func lintDockerfile(t *testing.T, dockerfile []byte) []string {
	t.Helper()
	ctx := context.Background()
	src := llb.Scratch()
	def, err := src.Marshal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sm := llb.NewSourceMap(&src, "Dockerfile", "Dockerfile", dockerfile)
	sm.Definition = def
	results, err := dockerfile2llb.DockerfileLint(ctx, dockerfile, dockerfile2llb.ConvertOpt{SourceMap: sm, MetaResolver: offlineImages{}})
	if err != nil {
		t.Fatalf("lint: %v", err)
	}
	var out []string
	for _, w := range results.Warnings {
		line := 0
		if w.Location != nil && len(w.Location.Ranges) > 0 {
			line = int(w.Location.Ranges[0].Start.Line)
		}
		out = append(out, fmt.Sprintf("line %d: %s: %s", line, w.RuleName, w.Detail))
	}
	if results.Error != nil {
		out = append(out, "build error: "+results.Error.Message)
	}
	return out
}

// offlineImages answers every base image with an empty linux configuration: the lint needs
// an image's environment and platform, not its layers, and no registry is reachable here.
type offlineImages struct{}

func (offlineImages) ResolveImageConfig(_ context.Context, ref string, opt sourceresolver.Opt) (string, digest.Digest, []byte, error) {
	arch := runtime.GOARCH
	if opt.ImageOpt != nil && opt.ImageOpt.Platform != nil {
		arch = opt.ImageOpt.Platform.Architecture
	}
	cfg := []byte(`{"architecture":"` + arch + `","os":"linux","config":{}}`)
	return ref, digest.FromBytes(cfg), cfg, nil
}

func TestDockerfile(t *testing.T) {
	stages := parseDockerfile(t)
	for _, w := range lintDockerfile(t, readFile(t, "Dockerfile")) {
		t.Errorf("Dockerfile lint: %s", w)
	}
	if len(stages) < 2 {
		t.Fatalf("%d stages, want a build stage and a runtime stage", len(stages))
	}
	build, final := stages[0], stages[len(stages)-1]
	var release bool
	for _, c := range build.Commands {
		if run, ok := c.(*instructions.RunCommand); ok && strings.Contains(strings.Join(run.CmdLine, " "), "scripts/release -b") {
			release = true
		}
	}
	if !release {
		t.Error("the build stage must build with scripts/release -b (the one place the build flags live)")
	}
	var user string
	var copied []string
	var entrypoint, cmd []string
	for _, c := range final.Commands {
		switch c := c.(type) {
		case *instructions.UserCommand:
			user = c.User
		case *instructions.CopyCommand:
			if c.From == build.Name {
				copied = append(copied, c.SourcePaths...)
			}
		case *instructions.EntrypointCommand:
			entrypoint = c.CmdLine
			if c.PrependShell {
				t.Error("ENTRYPOINT in shell form: the image has no shell, and signals would not reach the daemon")
			}
		case *instructions.CmdCommand:
			cmd = c.CmdLine
		}
	}
	if uid, _, _ := strings.Cut(user, ":"); uid == "" || uid == "0" || uid == "root" {
		t.Errorf("the image runs as %q; want a non-root USER", user)
	}
	for _, bin := range []string{"sharddaemon", "shardctl"} {
		if !slices.ContainsFunc(copied, func(p string) bool { return strings.HasSuffix(p, "/"+bin) }) {
			t.Errorf("the runtime stage does not copy %s from the build stage (copies %v)", bin, copied)
		}
	}
	if len(entrypoint) != 1 || !strings.HasSuffix(entrypoint[0], "/sharddaemon") {
		t.Errorf("ENTRYPOINT %q, want the daemon", entrypoint)
	}
	cfg := effective(t, "Dockerfile CMD", cmd)
	if cfg["metrics-listen"] == `""` || !strings.Contains(cfg["listen"], "0.0.0.0") {
		t.Errorf("CMD %q: the daemon must listen beyond loopback and serve metrics and probes", cmd)
	}
}

// TestDockerfileLintCatchesMistakes: the lint above reports what docker build --check would
// for a Dockerfile with mistakes of casing and form.
func TestDockerfileLintCatchesMistakes(t *testing.T) {
	bad := "FROM golang:1.26 as build\nRUN true\nfrom scratch\nCOPY --from=build /go/bin/x /x\nENV DIR=$UNDEFINED\nENTRYPOINT /x\n"
	warnings := strings.Join(lintDockerfile(t, []byte(bad)), "\n")
	for _, want := range []string{"FromAsCasing", "ConsistentInstructionCasing", "JSONArgsRecommended", "UndefinedVar"} {
		if !strings.Contains(warnings, want) {
			t.Errorf("lint of a bad Dockerfile found:\n%s\nwant %s", warnings, want)
		}
	}
}
