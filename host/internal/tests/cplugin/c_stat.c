/*
 * c_stat: a toolhost/v1 plugin written in C, from abi/README.md alone, to
 * show that the ABI does not need toolhost's Go SDK.
 *
 * The tool describes one file or directory of the workspace through the
 * fs_stat host function: "notes.txt: file, 14 bytes, mode 0644".
 *
 * Build: host/internal/tests/cplugin/build.sh OUT.wasm (clang, wasm-ld and wasi-libc).
 * The module is a WASI reactor: crt1-reactor.o supplies _initialize.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT(name) __attribute__((export_name(name)))
#define HOST(name) __attribute__((import_module("toolhost_v1"), import_name(name)))

/* Host functions: >= 0 is the length of a staged response, < 0 is
 * -(status << 32 | n) with an n-byte HostError JSON object staged. */
HOST("response_take") int64_t response_take(uint8_t *ptr, uint32_t len);
HOST("fs_stat") int64_t fs_stat(const uint8_t *path, uint32_t len);

static const char manifest[] =
    "{\"abi\":\"toolhost/v1\",\"name\":\"c_stat\",\"version\":\"1.0.0\","
    "\"description\":\"Describe a file or directory in the workspace: its type, size and permission bits.\","
    "\"parameters\":{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\",\"minLength\":1,"
    "\"description\":\"File or directory, relative to the workspace root.\"}},"
    "\"required\":[\"path\"],\"additionalProperties\":false},"
    "\"side_effecting\":false,\"requires_approval\":false,\"risk_level\":\"low\","
    "\"timeout_class\":\"file_operations\",\"path_args\":[\"path\"],\"capabilities\":[\"fs.read\"]}";

/* buf is a growable byte buffer. Running out of memory traps: the host
 * then discards the instance, which is all a plugin can do about it. */
typedef struct {
	uint8_t *p;
	uint32_t len, cap;
} buf;

static void reserve(buf *b, uint32_t n) {
	if (n <= b->cap)
		return;
	uint32_t cap = b->cap ? b->cap : 256;
	while (cap < n) {
		if (cap > UINT32_MAX / 2)
			__builtin_trap();
		cap *= 2;
	}
	uint8_t *p = realloc(b->p, cap);
	if (p == NULL)
		__builtin_trap();
	b->p = p;
	b->cap = cap;
}

static void put(buf *b, const void *data, uint32_t n) {
	if (n > UINT32_MAX - b->len)
		__builtin_trap();
	reserve(b, b->len + n);
	if (n > 0)
		memcpy(b->p + b->len, data, n);
	b->len += n;
}

static void puts_(buf *b, const char *s) { put(b, s, (uint32_t)strlen(s)); }

static void put_u32(buf *b, uint32_t v) { put(b, &v, 4); } /* wasm is little-endian */

static void put_field(buf *b, const void *data, uint32_t n) {
	put_u32(b, n);
	put(b, data, n);
}

static void put_uint(buf *b, uint64_t v, unsigned base, int min_digits) {
	char digits[24];
	int i = sizeof digits;
	do {
		digits[--i] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v > 0 || (int)sizeof digits - i < min_digits);
	put(b, digits + i, sizeof digits - i);
}

/* in receives what the host writes through toolhost_alloc; out holds the
 * last result until the next export call, as the ABI requires. */
static buf in, out, scratch;

static uint64_t pack(const uint8_t *p, uint32_t n) { return (uint64_t)(uintptr_t)p << 32 | n; }

EXPORT("toolhost_abi_v1") void toolhost_abi_v1(void) {}

EXPORT("toolhost_alloc") uint8_t *toolhost_alloc(uint32_t size) {
	reserve(&in, size);
	in.len = size;
	return in.p;
}

EXPORT("toolhost_describe") uint64_t toolhost_describe(void) {
	return pack((const uint8_t *)manifest, sizeof manifest - 1);
}

/* result encodes a result envelope into out:
 * u32 magic "THR1" | u32 flags | u32 len + kind | u32 len + content | u32 len + details */
static uint64_t result(const char *kind, const uint8_t *content, uint32_t content_len,
                       const uint8_t *details, uint32_t details_len) {
	out.len = 0;
	put_u32(&out, 0x31524854);
	put_u32(&out, 0);
	put_field(&out, kind, (uint32_t)strlen(kind));
	put_field(&out, content, content_len);
	put_field(&out, details, details_len);
	return pack(out.p, out.len);
}

/* structured_result is a success whose output is also one JSON object,
 * in the optional field after details: ... | u32 len + structured */
static uint64_t structured_result(const uint8_t *content, uint32_t content_len,
                                  const uint8_t *structured, uint32_t structured_len) {
	result("", content, content_len, NULL, 0);
	put_field(&out, structured, structured_len);
	return pack(out.p, out.len);
}

static uint64_t failure(const char *kind, const char *message) {
	return result(kind, (const uint8_t *)message, (uint32_t)strlen(message), NULL, 0);
}

/* ---- just enough JSON: find a top-level member, decode a string ---- */

typedef struct {
	const uint8_t *p, *end;
} cursor;

static void skip_ws(cursor *c) {
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
		c->p++;
}

static int hex4(cursor *c, uint32_t *v) {
	if (c->end - c->p < 4)
		return 0;
	*v = 0;
	for (int i = 0; i < 4; i++) {
		uint8_t h = *c->p++;
		*v <<= 4;
		if (h >= '0' && h <= '9')
			*v |= h - '0';
		else if ((h | 0x20) >= 'a' && (h | 0x20) <= 'f')
			*v |= (h | 0x20) - 'a' + 10;
		else
			return 0;
	}
	return 1;
}

static void put_utf8(buf *b, uint32_t r) {
	uint8_t u[4];
	uint32_t n;
	if (r < 0x80) {
		u[0] = r, n = 1;
	} else if (r < 0x800) {
		u[0] = 0xc0 | r >> 6, u[1] = 0x80 | (r & 0x3f), n = 2;
	} else if (r < 0x10000) {
		u[0] = 0xe0 | r >> 12, u[1] = 0x80 | (r >> 6 & 0x3f), u[2] = 0x80 | (r & 0x3f), n = 3;
	} else {
		u[0] = 0xf0 | r >> 18, u[1] = 0x80 | (r >> 12 & 0x3f), u[2] = 0x80 | (r >> 6 & 0x3f),
		u[3] = 0x80 | (r & 0x3f), n = 4;
	}
	put(b, u, n);
}

/* string decodes the JSON string at c into b (if not NULL); 0 if malformed. */
static int string(cursor *c, buf *b) {
	if (c->p >= c->end || *c->p != '"')
		return 0;
	c->p++;
	while (c->p < c->end) {
		uint8_t ch = *c->p++;
		if (ch == '"')
			return 1;
		if (ch < 0x20)
			return 0;
		if (ch != '\\') {
			if (b)
				put(b, &ch, 1);
			continue;
		}
		if (c->p >= c->end)
			return 0;
		uint8_t esc = *c->p++;
		const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
		const char *at = esc ? strchr(from, esc) : NULL;
		if (at) {
			if (b)
				put(b, &to[at - from], 1);
			continue;
		}
		uint32_t r, lo;
		if (esc != 'u' || !hex4(c, &r))
			return 0;
		if (r >= 0xd800 && r < 0xdc00 && c->end - c->p >= 6 && c->p[0] == '\\' && c->p[1] == 'u') {
			cursor save = *c;
			c->p += 2;
			if (hex4(c, &lo) && lo >= 0xdc00 && lo < 0xe000)
				r = 0x10000 + ((r - 0xd800) << 10) + (lo - 0xdc00);
			else
				*c = save;
		}
		if (r >= 0xd800 && r < 0xe000)
			r = 0xfffd; /* a lone surrogate */
		if (b)
			put_utf8(b, r);
	}
	return 0;
}

/* skip passes over one JSON value; depth bounds the nesting a hostile
 * argument could use to exhaust the stack. */
static int skip(cursor *c, int depth) {
	skip_ws(c);
	if (c->p >= c->end || depth > 64)
		return 0;
	uint8_t open = *c->p;
	if (open == '"')
		return string(c, NULL);
	if (open != '{' && open != '[') {
		const uint8_t *start = c->p;
		while (c->p < c->end && *c->p != 0 && strchr("+-.0123456789eEtrufalsn", *c->p))
			c->p++;
		return c->p > start;
	}
	uint8_t close = open == '{' ? '}' : ']';
	c->p++;
	skip_ws(c);
	if (c->p < c->end && *c->p == close) {
		c->p++;
		return 1;
	}
	for (;;) {
		if (open == '{') {
			skip_ws(c);
			if (!string(c, NULL))
				return 0;
			skip_ws(c);
			if (c->p >= c->end || *c->p++ != ':')
				return 0;
		}
		if (!skip(c, depth + 1))
			return 0;
		skip_ws(c);
		if (c->p >= c->end)
			return 0;
		uint8_t sep = *c->p++;
		if (sep == close)
			return 1;
		if (sep != ',')
			return 0;
	}
}

/* member finds key in the JSON object [p, end) and leaves c at its value;
 * 0 when the object is malformed or has no such member. A key given twice
 * is the last one: that is the value the host checked against the sandbox
 * and showed for approval (it reads arguments as Go's encoding/json does),
 * so the plugin must act on it and not on an earlier decoy. */
static int member(const uint8_t *p, uint32_t n, const char *key, cursor *c) {
	cursor at;
	int found = 0;
	c->p = p, c->end = p + n;
	skip_ws(c);
	if (c->p >= c->end || *c->p++ != '{')
		return 0;
	skip_ws(c);
	if (c->p < c->end && *c->p == '}')
		return 0;
	for (;;) {
		skip_ws(c);
		scratch.len = 0;
		if (!string(c, &scratch))
			return 0;
		skip_ws(c);
		if (c->p >= c->end || *c->p++ != ':')
			return 0;
		skip_ws(c);
		if (scratch.len == strlen(key) && memcmp(scratch.p, key, scratch.len) == 0) {
			at = *c;
			found = 1;
		}
		if (!skip(c, 1))
			return 0;
		skip_ws(c);
		if (c->p >= c->end)
			return 0;
		uint8_t sep = *c->p++;
		if (sep == '}')
			break;
		if (sep != ',')
			return 0;
	}
	if (!found)
		return 0;
	*c = at;
	return 1;
}

/* path decodes the "path" argument into b. */
static int path_arg(const uint8_t *args, uint32_t n, buf *b) {
	cursor c;
	b->len = 0;
	return member(args, n, "path", &c) && string(&c, b) && b->len > 0;
}

static buf path;

EXPORT("toolhost_summary") uint64_t toolhost_summary(const uint8_t *args, uint32_t n) {
	if (!path_arg(args, n, &path))
		return failure("BadArgs", "the arguments need a non-empty string \"path\"");
	scratch.len = 0;
	puts_(&scratch, "Stat ");
	put(&scratch, path.p, path.len);
	return result("", scratch.p, scratch.len, NULL, 0);
}

/* request decodes the request envelope's arguments:
 * u32 magic "THQ1" | u32 len + id | u32 len + tool | u32 len + conversation
 * | i64 x 5 limits | u32 len + args */
static int request_args(const uint8_t *p, uint32_t n, const uint8_t **args, uint32_t *args_len) {
	const uint8_t *end = p + n;
	uint32_t v;
	if (n < 4 || (memcpy(&v, p, 4), v) != 0x31514854)
		return 0;
	p += 4;
	for (int field = 0; field < 4; field++) {
		if (field == 3) {
			if (end - p < 5 * 8)
				return 0;
			p += 5 * 8;
		}
		if (end - p < 4)
			return 0;
		memcpy(&v, p, 4);
		p += 4;
		if (v > (uint32_t)(end - p))
			return 0;
		*args = p, *args_len = v;
		p += v;
	}
	return 1;
}

/* host_failure turns a failed host function's staged HostError
 * {"kind", "message", "details"?} into the call's result, unchanged. */
static uint64_t host_failure(uint32_t n) {
	static buf err, kind, message;
	reserve(&err, n);
	err.len = (uint32_t)response_take(err.p, n);
	cursor c;
	kind.len = message.len = 0;
	if (!member(err.p, err.len, "kind", &c) || !string(&c, &kind) || kind.len == 0)
		puts_(&kind, "ExecutionFailed");
	if (!member(err.p, err.len, "message", &c) || !string(&c, &message))
		puts_(&message, "c_stat: fs_stat failed");
	const uint8_t *details = NULL;
	uint32_t details_len = 0;
	if (member(err.p, err.len, "details", &c) && c.p < c.end && *c.p == '{') {
		details = c.p;
		if (skip(&c, 1))
			details_len = (uint32_t)(c.p - details);
	}
	put(&kind, "", 1); /* NUL-terminate for result() */
	return result((const char *)kind.p, message.p, message.len, details, details_len);
}

static const char *type_name(uint8_t t) {
	switch (t) {
	case 0: return "file";
	case 1: return "directory";
	case 2: return "symlink";
	}
	return "other";
}

EXPORT("toolhost_call") uint64_t toolhost_call(const uint8_t *req, uint32_t n) {
	const uint8_t *args;
	uint32_t args_len;
	if (!request_args(req, n, &args, &args_len))
		return failure("ExecutionFailed", "c_stat could not decode the request envelope");
	if (!path_arg(args, args_len, &path))
		return failure("BadArgs", "the arguments need a non-empty string \"path\"");
	int64_t r = fs_stat(path.p, path.len);
	if (r < 0)
		return host_failure((uint32_t)((uint64_t)-r & 0xffffffff));
	static buf info;
	reserve(&info, (uint32_t)r);
	info.len = (uint32_t)response_take(info.p, (uint32_t)r);
	/* FileInfo = u8 type | u32 mode | u64 size | i64 mtime | u32 len + path */
	uint32_t mode, name_len;
	uint64_t size;
	if (info.len < 25)
		return failure("ExecutionFailed", "c_stat: fs_stat returned a short FileInfo");
	memcpy(&mode, info.p + 1, 4);
	memcpy(&size, info.p + 5, 8);
	memcpy(&name_len, info.p + 21, 4);
	if (name_len > info.len - 25)
		return failure("ExecutionFailed", "c_stat: fs_stat returned a malformed FileInfo");
	scratch.len = 0;
	put(&scratch, info.p + 25, name_len);
	puts_(&scratch, ": ");
	puts_(&scratch, type_name(info.p[0]));
	puts_(&scratch, ", ");
	put_uint(&scratch, size, 10, 1);
	puts_(&scratch, " bytes, mode ");
	put_uint(&scratch, mode, 8, 4);
	/* The same as one JSON object: {"type":"file","size":14,"mode":420}. */
	static buf shape;
	shape.len = 0;
	puts_(&shape, "{\"type\":\"");
	puts_(&shape, type_name(info.p[0]));
	puts_(&shape, "\",\"size\":");
	put_uint(&shape, size, 10, 1);
	puts_(&shape, ",\"mode\":");
	put_uint(&shape, mode, 10, 1);
	puts_(&shape, "}");
	return structured_result(scratch.p, scratch.len, shape.p, shape.len);
}
