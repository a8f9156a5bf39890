#!/bin/sh
# Makes the image fixtures beside this script; see README.md. Needs Debian 12's
# imagemagick, libjpeg-turbo-progs, webp and libimage-exiftool-perl.
set -eu
cd "$(dirname "$0")"
convert=/usr/bin/convert
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# 301 x 67: odd, and wider than 255 so that every format's high size byte counts.
gradient="-size 301x67 gradient:red-blue"
png_quiet="-strip -define png:exclude-chunks=date,time"

$convert $gradient $png_quiet png24:rgb.png
$convert $gradient -depth 16 $png_quiet png48:rgb16.png
$convert -size 33x17 xc:green -colors 4 $png_quiet png8:palette.png
$convert -size 40x30 gradient:white-black -interlace PNG $png_quiet interlaced.png

$convert $gradient -strip ppm:"$scratch/source.ppm"
cjpeg -quality 80 "$scratch/source.ppm" > baseline.jpg
cjpeg -quality 80 -progressive "$scratch/source.ppm" > progressive.jpg
cjpeg -quality 80 -arithmetic "$scratch/source.ppm" > arithmetic.jpg
$convert $gradient -strip -colorspace CMYK -quality 80 cmyk.jpg
cp baseline.jpg exif-orientation-6.jpg
exiftool -q -overwrite_original -Orientation#=6 exif-orientation-6.jpg

$convert $gradient $png_quiet png24:"$scratch/rgb.png"
$convert -size 301x67 gradient:red-none $png_quiet png32:"$scratch/alpha.png"
cwebp -quiet -q 80 -metadata none "$scratch/rgb.png" -o lossy.webp
cwebp -quiet -lossless -metadata none "$scratch/rgb.png" -o lossless.webp
cwebp -quiet -q 80 -metadata none "$scratch/alpha.png" -o alpha.webp

$convert $gradient -strip gif87:gif87a.gif
$convert $gradient -strip gif89a.gif
$convert -delay 10 -size 300x40 xc:red -size 300x40 xc:blue -loop 0 -strip animated.gif
gif2webp -quiet animated.gif -o animated.webp
