/*
 * kubeapi/http_easy: the TLS options of an attempt, seen from the wire. A
 * TLS server in a second thread (blocking OpenSSL, a context built from
 * its certificate files for each connection, "Connection: close" so that
 * every request needs a new connection) and the engine on this thread's
 * loop, trusting only a CA file.
 *
 * What is tested: a rotated CA file (a Secret's ca.crt, replaced as the
 * kubelet does, by a rename) is what a new connection verifies against.
 * curl caches the store built from a CA file on the multi handle for
 * CURLOPT_CA_CACHE_TIMEOUT (24 h by default) and only compares the file's
 * name, so without the option the second request fails verification.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <uv.h>

#include "kubeapi/conn.h"
#include "kubeapi/http.h"

#define WAIT_MS 10000

struct tls_srv {
	int lfd, port;
	pthread_t thread;
	atomic_int stop;
	atomic_int served; /* requests answered */
	char dir[64], cert[128], key[128], ca[128], tmp[128];
};

/* ---- Certificates ------------------------------------------------------ */

static void add_ext(X509 *x, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509_EXTENSION *e;

	X509V3_set_ctx_nodb(&ctx);
	X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
	assert_non_null(e = X509V3_EXT_conf_nid(NULL, &ctx, nid, value));
	assert_int_equal(X509_add_ext(x, e, -1), 1);
	X509_EXTENSION_free(e);
}

/* A new key and a self-signed certificate for 127.0.0.1 (its own CA),
 * named cn: the certificate to cert (and to ca when set), the key to key. */
static void write_cert(const char *cert, const char *key_path, const char *ca, const char *cn)
{
	EVP_PKEY *key = EVP_EC_gen("P-256");
	X509 *x = X509_new();
	X509_NAME *name;
	FILE *f;

	assert_non_null(key);
	assert_non_null(x);
	X509_set_version(x, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
	X509_gmtime_adj(X509_getm_notBefore(x), -60);
	X509_gmtime_adj(X509_getm_notAfter(x), 3600);
	X509_set_pubkey(x, key);
	name = X509_get_subject_name(x);
	X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
	X509_set_issuer_name(x, name);
	add_ext(x, NID_basic_constraints, "critical,CA:TRUE");
	add_ext(x, NID_subject_alt_name, "IP:127.0.0.1");
	assert_true(X509_sign(x, key, EVP_sha256()) > 0);
	assert_non_null(f = fopen(cert, "w"));
	assert_int_equal(PEM_write_X509(f, x), 1);
	fclose(f);
	if (ca) {
		assert_non_null(f = fopen(ca, "w"));
		assert_int_equal(PEM_write_X509(f, x), 1);
		fclose(f);
	}
	assert_non_null(f = fopen(key_path, "w"));
	assert_int_equal(PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL), 1);
	fclose(f);
	X509_free(x);
	EVP_PKEY_free(key);
}

/* ---- The server (its own thread) --------------------------------------- */

static const char answer[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                             "Content-Length: 2\r\nConnection: close\r\n\r\n{}";

/* Reads a request head and answers it; anything wrong just closes. */
static void serve_ssl(struct tls_srv *s, SSL *ssl)
{
	char buf[4096];
	int len = 0, n;

	if (SSL_accept(ssl) != 1)
		return;
	while (!memmem(buf, (size_t)len, "\r\n\r\n", 4) &&
	       (n = SSL_read(ssl, buf + len, (int)sizeof(buf) - len)) > 0)
		len += n;
	if (!memmem(buf, (size_t)len, "\r\n\r\n", 4))
		return;
	if (SSL_write(ssl, answer, (int)strlen(answer)) == (int)strlen(answer))
		atomic_fetch_add(&s->served, 1);
	SSL_shutdown(ssl);
}

/* A context from the files as they are now, without session resumption
 * (a resumed session would skip the verification under test). */
static void serve_one(struct tls_srv *s, int fd)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	struct timeval tv = {.tv_sec = 5};
	SSL *ssl = NULL;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (!ctx)
		return;
	SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	if (SSL_CTX_use_certificate_chain_file(ctx, s->cert) == 1 &&
	    SSL_CTX_use_PrivateKey_file(ctx, s->key, SSL_FILETYPE_PEM) == 1 &&
	    (ssl = SSL_new(ctx))) {
		SSL_set_fd(ssl, fd);
		serve_ssl(s, ssl);
	}
	SSL_free(ssl);
	SSL_CTX_free(ctx);
}

static void *srv_main(void *arg)
{
	struct tls_srv *s = arg;

	while (!atomic_load(&s->stop)) {
		struct pollfd p = {.fd = s->lfd, .events = POLLIN};
		int fd;

		if (poll(&p, 1, 50) <= 0)
			continue;
		fd = accept(s->lfd, NULL, NULL);
		if (fd < 0)
			continue;
		serve_one(s, fd);
		close(fd);
	}
	return NULL;
}

static void srv_listen(struct tls_srv *s)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t len = sizeof(sa);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true((s->lfd = socket(AF_INET, SOCK_STREAM, 0)) >= 0);
	assert_int_equal(bind(s->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(s->lfd, 16), 0);
	assert_int_equal(getsockname(s->lfd, (struct sockaddr *)&sa, &len), 0);
	s->port = ntohs(sa.sin_port);
	assert_int_equal(pthread_create(&s->thread, NULL, srv_main, s), 0);
}

static int setup(void **state)
{
	struct tls_srv *s = calloc(1, sizeof(*s));

	assert_non_null(s);
	snprintf(s->dir, sizeof(s->dir), "/tmp/muster-http-easy-XXXXXX");
	assert_non_null(mkdtemp(s->dir));
	snprintf(s->cert, sizeof(s->cert), "%s/tls.crt", s->dir);
	snprintf(s->key, sizeof(s->key), "%s/tls.key", s->dir);
	snprintf(s->ca, sizeof(s->ca), "%s/ca.crt", s->dir);
	snprintf(s->tmp, sizeof(s->tmp), "%s/ca.crt.new", s->dir);
	s->lfd = -1;
	*state = s;
	return 0;
}

static int teardown(void **state)
{
	struct tls_srv *s = *state;

	if (s->lfd >= 0) {
		atomic_store(&s->stop, 1);
		pthread_join(s->thread, NULL);
		close(s->lfd);
	}
	unlink(s->cert);
	unlink(s->key);
	unlink(s->ca);
	unlink(s->tmp);
	rmdir(s->dir);
	free(s);
	return 0;
}

/* ---- The client (the engine, on this thread's loop) --------------------- */

struct result {
	int done, err;
	long status;
};

static void on_done(void *data, const struct kubeapi_response *r)
{
	struct result *res = data;

	res->done = 1;
	res->err = r->err;
	res->status = r->status;
}

static void on_closed(void *data)
{
	*(int *)data = 1;
}

/* Runs the loop until *flag is set or WAIT_MS pass. */
static void run_until(uv_loop_t *loop, const int *flag)
{
	uint64_t end = uv_now(loop) + WAIT_MS;

	while (!*flag && uv_now(loop) < end)
		uv_run(loop, UV_RUN_ONCE);
}

/* One GET on engine h; its result. */
static struct result get(uv_loop_t *loop, struct kubeapi_http *h)
{
	struct result r = {0};
	struct kubeapi_request req = {
	    .method = KUBEAPI_GET, .path = "/api", .done_cb = on_done, .data = &r};

	assert_int_equal(kubeapi_http_submit(h, &req, NULL), 0);
	run_until(loop, &r.done);
	assert_true(r.done);
	return r;
}

/* The server's certificate and the client's CA file both replaced, the CA
 * by a rename as the kubelet does: the next connection verifies the new
 * certificate against the new CA. */
static void test_rotated_ca_file_is_read_again(void **state)
{
	struct tls_srv *s = *state;
	struct kubeapi_conn conn = {0};
	struct kubeapi_http *h = NULL;
	struct result r;
	uv_loop_t loop;
	char url[64];
	int closed = 0;

	write_cert(s->cert, s->key, s->ca, "first");
	srv_listen(s);
	snprintf(url, sizeof(url), "https://127.0.0.1:%d", s->port);
	assert_non_null(conn.server = strdup(url));
	assert_non_null(conn.ca_file = strdup(s->ca));
	assert_int_equal(uv_loop_init(&loop), 0);
	assert_int_equal(kubeapi_http_new(&loop, &conn, NULL, &h), 0);

	r = get(&loop, h);
	if (r.err || r.status != 200)
		fail_msg("first request: err %d, status %ld", r.err, r.status);
	write_cert(s->cert, s->key, s->tmp, "second");
	assert_int_equal(rename(s->tmp, s->ca), 0);
	r = get(&loop, h);
	if (r.err || r.status != 200)
		fail_msg("after the CA's rotation: err %d, status %ld (the old CA still used?)",
		         r.err, r.status);
	assert_int_equal(atomic_load(&s->served), 2);

	kubeapi_http_close(&h, on_closed, &closed);
	run_until(&loop, &closed);
	assert_true(closed);
	assert_int_equal(uv_run(&loop, UV_RUN_NOWAIT), 0);
	assert_int_equal(uv_loop_close(&loop), 0);
	kubeapi_conn_free(&conn);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_rotated_ca_file_is_read_again, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
