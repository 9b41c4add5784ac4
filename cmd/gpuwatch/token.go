//go:build !agentonly

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/gpuwatch/gpuwatch/internal/auth"
)

// runToken is `gpuwatch token --name N --role R [--nodes GLOB,…] [--secret-file F]`.
func runToken(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("token", stderr)
	name := fs.String("name", "", "the token's name: the actor in the audit log (required)")
	role := fs.String("role", "", "read, agent, operate or admin (required)")
	nodes := fs.String("nodes", "", "with --role agent: comma-separated node name globs the token may speak for (node-0*)")
	secretFile := fs.String("secret-file", "", "write the secret to this file (mode 0600, must not exist) instead of printing it")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: gpuwatch token --name NAME --role read|agent|operate|admin [--nodes GLOBS] [--secret-file FILE]")
		fmt.Fprintln(stderr)
		fmt.Fprintln(stderr, "Makes a random secret and prints the entry to add to the server's --auth.tokens file.")
		fmt.Fprintln(stderr, "The file holds only the secret's SHA-256; the secret goes to the client")
		fmt.Fprintln(stderr, "(gpuwatch agent --auth.token-file, the CLI's --token-file or $GPUWATCH_TOKEN).")
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *name == "" || *role == "" {
		return fmt.Errorf("%w: --name and --role are required", errUsage)
	}
	r, err := auth.ParseRole(*role)
	if err != nil {
		return fmt.Errorf("%w: --role: %v", errUsage, err)
	}
	var globs []string
	if *nodes != "" {
		for _, g := range strings.Split(*nodes, ",") {
			if g = strings.TrimSpace(g); g != "" {
				globs = append(globs, g)
			}
		}
	}
	secret, err := auth.NewSecret()
	if err != nil {
		return err
	}
	entry := auth.Entry(*name, r, secret, globs...)
	// The entry must load as the server would load it.
	if _, err := auth.ParseTokens("(new entry)", []byte(entry)); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if *secretFile != "" {
		f, err := os.OpenFile(*secretFile, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return fmt.Errorf("--secret-file: %w", err)
		}
		if _, err := fmt.Fprintln(f, secret); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "secret written to %s; add this entry to the server's token file:\n", *secretFile)
	} else {
		fmt.Fprintf(stderr, "secret (shown once; give it to the client, keep it out of the token file):\n%s\n\nadd this entry to the server's token file:\n", secret)
	}
	fmt.Fprint(stdout, entry)
	return nil
}
