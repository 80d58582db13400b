// Command stage lays out a package's payload from a built delta binary
// (package packaging):
//
//	stage mac BINARY VERSION ROOT SCRIPTS BUILD   the .pkg's payload and scripts (BUILD: CFBundleVersion)
//	stage deb BINARY VERSION ARCH ROOT      the .deb's tree
//	stage debfile REPO VERSION ARCH OUT     build the .deb into folder OUT (make deb)
//	stage macversion VERSION                VERSION as Info.plist and pkgbuild take it
//	stage civersion LASTTAG RUN             an untagged build's version, above LASTTAG
//	stage notarized FILE                    the id of an accepted notarization,
//	                                        from notarytool's JSON in FILE; else
//	                                        the verdict on stderr, the id (if
//	                                        any) on stdout, and exit 1
package main

import (
	"fmt"
	"os"

	"github.com/delta-roads/delta/packaging"
)

func main() {
	var err error
	switch {
	case len(os.Args) == 7 && os.Args[1] == "mac":
		err = packaging.StageMac(os.Args[4], os.Args[5], os.Args[2], os.Args[3], os.Args[6])
	case len(os.Args) == 6 && os.Args[1] == "deb":
		err = packaging.StageDeb(os.Args[5], os.Args[2], os.Args[3], os.Args[4])
	case len(os.Args) == 6 && os.Args[1] == "debfile":
		var deb string
		if deb, err = packaging.BuildDeb(os.Args[2], os.Args[5], os.Args[3], os.Args[4]); err == nil {
			fmt.Println(deb)
		}
	case len(os.Args) == 4 && os.Args[1] == "civersion":
		fmt.Println(packaging.CIVersion(os.Args[2], os.Args[3]))
	case len(os.Args) == 3 && os.Args[1] == "macversion":
		fmt.Println(packaging.MacVersion(os.Args[2]))
	case len(os.Args) == 3 && os.Args[1] == "notarized":
		var b []byte
		if b, err = os.ReadFile(os.Args[2]); err == nil {
			var id string
			id, err = packaging.Notarized(b)
			fmt.Println(id)
		}
	default:
		err = fmt.Errorf("usage: stage mac BINARY VERSION ROOT SCRIPTS BUILD | stage deb BINARY VERSION ARCH ROOT | stage debfile REPO VERSION ARCH OUT | stage macversion VERSION | stage civersion LASTTAG RUN | stage notarized FILE")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "stage:", err)
		os.Exit(1)
	}
}
