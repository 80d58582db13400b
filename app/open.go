package main

import (
	"flag"
	"fmt"

	"github.com/delta-roads/delta/app/cli"
	"github.com/delta-roads/delta/gateway/wire/view"
	"github.com/delta-roads/delta/ui"
)

type openOpts struct {
	print, setup  *bool
	call, receipt *string
}

// openCommand is `delta open`: a one-time login link to the running
// Delta's status page, printed and opened in the browser.
var openCommand = &cli.Command{Name: "open", Args: "[--print] [--setup | --call ID | --receipt ID]", Summary: "open the status page in the browser with a one-time login link (60 s)",
	Flags: func(fs *flag.FlagSet) any {
		return &openOpts{print: fs.Bool("print", false, "print the link only; do not open a browser"),
			setup:   fs.Bool("setup", false, "open the setup page: this computer's apps to share, other computers' apps to open, computers to pair"),
			call:    fs.String("call", "", "open the page at this call (one this computer made)"),
			receipt: fs.String("receipt", "", "open the page at what this computer received under this request id")}
	},
	Run: func(e *cli.Env, o any, args []string) error {
		if len(args) > 0 {
			return cli.Exitf(cli.ExitUsage, "open: unexpected argument %q (delta open [--print])", args[0])
		}
		c, err := e.Client()
		if err != nil {
			return err
		}
		link, err := c.LoginLink(e.Ctx)
		if err != nil {
			return e.DownErr(fmt.Errorf("open: Delta at %s refused a login link: %w", c.URL(), err))
		}
		switch opts := o.(*openOpts); {
		case *opts.setup:
			link = view.PageAt(link, "setup", "computer")
		case *opts.call != "":
			link = view.PageAt(link, "call-"+*opts.call, "call-"+*opts.call)
		case *opts.receipt != "":
			link = view.PageAt(link, "receipt-"+*opts.receipt, "receipt-"+*opts.receipt)
		}
		fmt.Fprintln(e.Stdout, link)
		if *o.(*openOpts).print {
			return nil
		}
		if err := ui.OpenURL(link); err != nil {
			fmt.Fprintf(e.Stderr, "delta open: could not open a browser (%v); open the link above within 60 s\n", err)
		}
		return nil
	}}

// versionCommand is `delta version`.
var versionCommand = &cli.Command{Name: "version", Summary: "print Delta's version", Reads: true,
	Run: func(e *cli.Env, _ any, args []string) error {
		if e.JSON {
			return e.PrintJSON(map[string]string{"version": version})
		}
		fmt.Fprintln(e.Stdout, "delta", version)
		return nil
	}}
