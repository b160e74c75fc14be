// Package textedit is the text work of toolhost's editing tools
// (edit_file, edit_region, multi_edit): finding the text a model means
// to replace in a file, replacing it or a range of whole lines, and
// keeping everything else of the file byte for byte.
//
// Models quote a file the way they saw it, which is rarely byte for byte:
// a read tool's line numbers in front, LF where the file has CRLF, spaces
// where it has tabs, curly quotes where it has straight ones. Replace
// tries a fixed ladder of normalizations (Layer), each used only when the
// ones before it found nothing and each adding to those before, and says
// which one matched. There is no similarity matching beyond the ladder: a
// layer that finds the text in more than one place is an error that names
// every place, never a guess.
//
// A File keeps what a model never sees and must not lose: a UTF-8 byte
// order mark, the line-ending style and whether the last line ends with
// one. Only the matched region changes; what replaces it is written in
// the file's line-ending style (and, when indentation had to be
// normalized to match, in the file's indentation).
//
// The package needs no host: it runs inside WebAssembly plugins as well
// as natively, and imports only the standard library and the diff
// package the host uses, so a plugin's diff reads like the host's.
package textedit
