package image

import (
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

func TestParsePlatform(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    v1.Platform
		wantErr string
	}{
		{in: "linux/amd64", want: v1.Platform{OS: "linux", Architecture: "amd64"}},
		{in: "linux/arm64", want: v1.Platform{OS: "linux", Architecture: "arm64"}},
		{in: "darwin/arm64", wantErr: `platform "darwin/arm64": want linux/ARCH`},
		{in: "linux", wantErr: `platform "linux": want linux/ARCH`},
		{in: "linux/arm/v7", wantErr: `platform "linux/arm/v7": want linux/ARCH`},
	} {
		got, err := ParsePlatform(tc.in)
		switch {
		case tc.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParsePlatform(%q) = %v, %v; want an error saying %q", tc.in, got, err, tc.wantErr)
			}
		case err != nil || !got.Equals(tc.want):
			t.Errorf("ParsePlatform(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestParseCreated(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    time.Time
		wantErr bool
	}{
		{in: "0", want: time.Unix(0, 0).UTC()},
		{in: "1767323045\n", want: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
		{in: "2026-01-02T04:04:05+01:00", want: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
		{in: "yesterday", wantErr: true},
		{in: "", wantErr: true},
	} {
		got, err := ParseCreated(tc.in)
		if (err != nil) != tc.wantErr || (!tc.wantErr && !got.Equal(tc.want)) {
			t.Errorf("ParseCreated(%q) = %s, %v; want %s (error: %v)", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}
