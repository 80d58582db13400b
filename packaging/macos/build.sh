#!/bin/sh
# Builds Delta.app and Delta.pkg on a Mac (make app, make pkg):
#
#   packaging/macos/build.sh app    universal binary (lipo of the arm64 and
#                                   amd64 cgo builds) in Delta.app, signed
#   packaging/macos/build.sh pkg    the app, then pkgbuild + productbuild,
#                                   signed and notarized when it can be
#
# Signing and notarization happen when the identities are in the
# environment; otherwise the build is unsigned (ad hoc) and says so:
#   DELTA_SIGN_IDENTITY       "Developer ID Application: …" (codesign)
#   DELTA_INSTALLER_IDENTITY  "Developer ID Installer: …" (productsign)
#   DELTA_NOTARY_PROFILE      a notarytool keychain profile, or
#   APPLE_ID, APPLE_TEAM_ID, APPLE_APP_PASSWORD
set -eu
what=${1:-}
case $what in app | pkg) ;; *) echo "usage: $0 app|pkg" >&2; exit 2 ;; esac
if [ "$(uname -s)" != Darwin ]; then
	echo "build.sh: make $what builds a macOS bundle and needs a Mac (lipo, codesign, pkgbuild, productbuild); on $(uname -s), make deb builds the Linux package" >&2
	exit 1
fi
VERSION=${VERSION:-dev}
OUT=${OUT:-build/macos}
rm -rf "$OUT"
mkdir -p "$OUT"
ldflags="-s -w -X main.version=$VERSION"
# CGO_CFLAGS replaces Go's default "-O2 -g" rather than adding to it: the
# optimisation is named again beside the deployment target, or SQLite and
# the Objective-C are built at clang's -O0 (2-5 times slower; package-check
# keeps it so).
cflags="-O2 -g -mmacosx-version-min=12.0"
for arch in arm64 amd64; do
	cc_arch=$arch
	[ "$arch" = amd64 ] && cc_arch=x86_64
	CGO_ENABLED=1 GOOS=darwin GOARCH=$arch CC="clang -arch $cc_arch" CGO_CFLAGS="$cflags" CGO_LDFLAGS="-O2 -g -mmacosx-version-min=12.0" \
		go build -trimpath -ldflags "$ldflags" -o "$OUT/delta-$arch" ./app
done
lipo -create -output "$OUT/delta" "$OUT/delta-arm64" "$OUT/delta-amd64"
# CFBundleVersion: a whole number that grows with every build, the commits'
# count (the release workflow checks out the whole history).
build=$(git rev-list --count HEAD 2>/dev/null || echo 1)
go run ./packaging/cmd/stage mac "$OUT/delta" "$VERSION" "$OUT/root" "$OUT/scripts" "$build"
app="$OUT/root/Applications/Delta.app"
if [ -n "${DELTA_SIGN_IDENTITY:-}" ]; then
	codesign --force --options runtime --timestamp --entitlements packaging/macos/Delta.entitlements \
		--identifier com.delta-roads.delta --sign "$DELTA_SIGN_IDENTITY" "$app"
	codesign --verify --strict --verbose=2 "$app"
else
	echo "build.sh: DELTA_SIGN_IDENTITY is not set: Delta.app is signed ad hoc, not with a Developer ID (Gatekeeper will refuse it on other Macs)"
	codesign --force --sign - --identifier com.delta-roads.delta "$app"
fi
[ "$what" = app ] && { echo "build.sh: $app"; exit 0; }

# Installer compares versions as integers: v1.2.3 is 1.2.3 there.
macversion=$(go run ./packaging/cmd/stage macversion "$VERSION")
# --compression legacy: a gzip cpio Payload, as TestPkgReadBack reads it
# (left to itself pkgbuild may choose Apple Archive).
pkgbuild --root "$OUT/root" --component-plist packaging/macos/component.plist --scripts "$OUT/scripts" \
	--identifier com.delta-roads.delta.pkg --version "$macversion" --install-location / --compression legacy "$OUT/Delta-component.pkg"
sed "s/@VERSION@/$macversion/g" packaging/macos/Distribution.xml >"$OUT/Distribution.xml"
productbuild --distribution "$OUT/Distribution.xml" --package-path "$OUT" "$OUT/Delta-unsigned.pkg"
pkg="build/Delta-$VERSION.pkg"
if [ -n "${DELTA_INSTALLER_IDENTITY:-}" ]; then
	productsign --timestamp --sign "$DELTA_INSTALLER_IDENTITY" "$OUT/Delta-unsigned.pkg" "$pkg"
else
	echo "build.sh: DELTA_INSTALLER_IDENTITY is not set: the .pkg is not signed"
	cp "$OUT/Delta-unsigned.pkg" "$pkg"
fi
if [ -n "${DELTA_NOTARY_PROFILE:-}" ]; then
	packaging/macos/notarize.sh "$pkg" --keychain-profile "$DELTA_NOTARY_PROFILE"
elif [ -n "${APPLE_ID:-}" ] && [ -n "${APPLE_TEAM_ID:-}" ] && [ -n "${APPLE_APP_PASSWORD:-}" ]; then
	packaging/macos/notarize.sh "$pkg" --apple-id "$APPLE_ID" --team-id "$APPLE_TEAM_ID" --password "$APPLE_APP_PASSWORD"
else
	echo "build.sh: no notary credentials: the .pkg is not notarized"
fi
echo "build.sh: $pkg"
