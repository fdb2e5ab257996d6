/*
 * The JSON skimmer (jscan.h). A value is skipped by one loop over its bytes
 * with a nesting counter; a string by memchr() for its closing quote, which
 * is escaped exactly when an odd run of backslashes precedes it.
 */
#include "kubeapi/jscan.h"

#include <errno.h>
#include <string.h>

static size_t ws(const char *p, size_t len, size_t i)
{
	while (i < len && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r'))
		i++;
	return i;
}

/* Numbers, true, false, null: checked by the parser, only skipped here. */
static bool scalar_byte(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '-' || c == '+' ||
	       c == '.' || c == 'E';
}

/* *i at an opening quote: past the closing one. 0 or -EAGAIN. */
static int skip_string(const char *p, size_t len, size_t *i)
{
	size_t from = *i + 1;

	while (from < len) {
		const char *q = memchr(p + from, '"', len - from);
		size_t j, k;

		if (!q)
			break;
		j = (size_t)(q - p);
		for (k = j; k > from && p[k - 1] == '\\'; k--)
			;
		if ((j - k) % 2 == 0) {
			*i = j + 1;
			return 0;
		}
		from = j + 1;
	}
	return -EAGAIN;
}

/* One value from *pos (after whitespace): *pos past it. 0, -EINVAL, or
 * -EAGAIN when the text ends inside it. A scalar that runs to the end of
 * the text counts as whole: whoever reads on finds the text ended. */
static int skip_value(const char *p, size_t len, size_t *pos)
{
	size_t i = ws(p, len, *pos), depth = 0;

	do {
		if (i >= len)
			return -EAGAIN;
		switch (p[i]) {
		case '"':
			if (skip_string(p, len, &i) < 0)
				return -EAGAIN;
			break;
		case '{':
		case '[':
			depth++;
			i++;
			break;
		case '}':
		case ']':
			if (depth == 0)
				return -EINVAL;
			depth--;
			i++;
			break;
		case ',':
		case ':':
		case ' ':
		case '\t':
		case '\n':
		case '\r':
			if (depth == 0)
				return -EINVAL;
			i++;
			break;
		default:
			if (!scalar_byte(p[i]))
				return -EINVAL;
			while (i < len && scalar_byte(p[i]))
				i++;
		}
	} while (depth > 0);
	*pos = i;
	return 0;
}

int kubeapi__jiter_init(struct kubeapi__jiter *it, const char *p, size_t len, size_t off)
{
	size_t i = ws(p, len, off);

	if (i >= len)
		return -EAGAIN;
	if (p[i] != '{' && p[i] != '[')
		return -EINVAL;
	it->p = p;
	it->len = len;
	it->pos = i + 1;
	it->close = p[i] == '{' ? '}' : ']';
	it->first = true;
	return 0;
}

/* Past the comma (if not the first) and the key (objects): *i at the
 * value. 0, -EINVAL, -EAGAIN. */
static int member_head(struct kubeapi__jiter *it, size_t *i, struct kubeapi__span *key)
{
	const char *p = it->p;
	size_t start;

	if (!it->first) {
		if (p[*i] != ',')
			return -EINVAL;
		*i = ws(p, it->len, *i + 1);
	}
	it->first = false;
	if (it->close == ']')
		return 0;
	if (*i >= it->len)
		return -EAGAIN;
	if (p[*i] != '"')
		return -EINVAL;
	start = *i;
	if (skip_string(p, it->len, i) < 0)
		return -EAGAIN;
	if (key)
		*key = (struct kubeapi__span){start + 1, *i - start - 2};
	*i = ws(p, it->len, *i);
	if (*i >= it->len)
		return -EAGAIN;
	if (p[*i] != ':')
		return -EINVAL;
	*i = ws(p, it->len, *i + 1);
	return 0;
}

int kubeapi__jiter_next(struct kubeapi__jiter *it, struct kubeapi__span *key,
                        struct kubeapi__span *val)
{
	size_t i = ws(it->p, it->len, it->pos), start;
	int rc;

	*val = (struct kubeapi__span){it->len, 0};
	if (key)
		*key = (struct kubeapi__span){0, 0};
	if (i >= it->len)
		return -EAGAIN;
	if (it->p[i] == it->close) {
		it->pos = i + 1;
		return 0;
	}
	if ((rc = member_head(it, &i, key)) < 0)
		return rc;
	if (i >= it->len)
		return -EAGAIN;
	start = i;
	rc = skip_value(it->p, it->len, &i);
	if (rc == -EAGAIN)
		*val = (struct kubeapi__span){start, it->len - start};
	if (rc < 0)
		return rc;
	*val = (struct kubeapi__span){start, i - start};
	it->pos = i;
	return 1;
}

static bool key_is(const char *p, struct kubeapi__span key, const char *name)
{
	return key.len == strlen(name) && memcmp(p + key.off, name, key.len) == 0;
}

int kubeapi__jfind(const char *p, size_t len, size_t off, const char *name,
                   struct kubeapi__span *val)
{
	struct kubeapi__jiter it;
	struct kubeapi__span key;
	int rc = kubeapi__jiter_init(&it, p, len, off);

	*val = (struct kubeapi__span){len, 0};
	if (rc < 0)
		return rc;
	if (it.close != '}')
		return -EINVAL;
	while ((rc = kubeapi__jiter_next(&it, &key, val)) == 1)
		if (key_is(p, key, name))
			return 1;
	if (rc == -EAGAIN && val->len > 0 && !key_is(p, key, name))
		val->len = 0;
	return rc;
}

int kubeapi__jstring(const char *p, struct kubeapi__span val, char *out, size_t cap)
{
	size_t n, i;

	out[0] = '\0';
	if (val.len < 2 || p[val.off] != '"' || p[val.off + val.len - 1] != '"')
		return -EINVAL;
	n = val.len - 2;
	if (n >= cap)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)p[val.off + 1 + i];

		if (c == '\\' || c < 0x20)
			return -EINVAL;
	}
	memcpy(out, p + val.off + 1, n);
	out[n] = '\0';
	return 0;
}
