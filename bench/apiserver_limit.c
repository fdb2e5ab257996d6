/*
 * apiserver_limit: how many pod bindings per second the API server absorbs.
 *
 * The baseline for Muster's own bind throughput. It does the least a
 * scheduler can do: create N pods that no scheduler claims, then POST one
 * Binding per pod, keeping `concurrency` requests in flight on libcurl's
 * multi interface (HTTP/2 streams over one connection, or over as many
 * connections as it takes with --streams per connection, or that many
 * HTTP/1.1 connections). No informer, no JSON parsing of replies, no
 * decisions: whatever rate this reaches is the ceiling a scheduler can
 * approach, not exceed, on the same machine.
 *
 * usage: apiserver_limit --server URL --token TOKEN --cacert FILE
 *                        --namespace NS --nodes FILE [--pods N]
 *                        [--concurrency C] [--streams S] [--http1] [--prefix P]
 *                        [--only create|bind] [--members M] [--pod FILE]
 * Prints one line per phase: requests, failures, seconds, rate. --only
 * runs one phase: the pods <prefix>-000000 on are created, or bound (by
 * an earlier run with the same --pods and --prefix), so that a caller can
 * start a watch between the two, as bench/e2e_bind.py does.
 *
 * A pod is the smallest that schedules (busybox, 1m CPU), or with
 * --pod FILE the Pod in FILE (JSON, at most POD_MAX bytes), where every
 * "{name}" stands for the pod's name and every "{gang}" for its gang's:
 * bench/e2e_bind.py writes its own pods that way, so that the limit binds
 * what Muster binds (the server writes and sends out the whole pod on
 * each bind). --members M: gangs of M consecutive pods, each bound to one
 * node, as Muster packs them; without it consecutive pods go to
 * consecutive nodes.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#define MAX_NODES    100000
#define NAME_MAX_LEN 64
#define BODY_MAX     2048
#define POD_MAX      1024 /* a --pod template, before its names are filled in */
#define URL_MAX      512

struct options {
	const char *server, *token, *cacert, *ns, *nodes_file, *prefix, *pod_file;
	long pods, concurrency, streams;
	long members; /* 0: one a node in turn; else gangs of this many on a node */
	int http1;
	int create, bind; /* the phases to run */
};

struct nodes {
	char (*name)[NAME_MAX_LEN];
	long n;
};

/* One in-flight request: its handle and the buffers libcurl points into. */
struct slot {
	CURL *easy;
	char url[URL_MAX];
	char body[BODY_MAX];
	long index;
};

enum phase { PHASE_CREATE, PHASE_BIND };

struct run {
	const struct options *opt;
	const struct nodes *nodes;
	const char *pod; /* --pod's template, NULL for the smallest pod */
	enum phase phase;
	struct curl_slist *headers;
	long next, done, failed;
	long first_error;
	char first_error_body[256];
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int read_nodes(const char *path, struct nodes *out)
{
	FILE *f = fopen(path, "r");
	char line[NAME_MAX_LEN + 2];

	if (!f)
		return -errno;
	out->name = calloc(MAX_NODES, sizeof(*out->name));
	out->n = 0;
	if (!out->name) {
		fclose(f);
		return -ENOMEM;
	}
	while (out->n < MAX_NODES && fgets(line, sizeof(line), f)) {
		size_t len = strcspn(line, "\r\n");

		if (len >= NAME_MAX_LEN) { /* node names are at most 63 bytes here */
			fclose(f);
			return -ENAMETOOLONG;
		}
		if (len == 0)
			continue;
		memcpy(out->name[out->n], line, len);
		out->name[out->n++][len] = '\0';
	}
	fclose(f);
	return out->n > 0 ? 0 : -ENOENT;
}

/* Replies are not parsed; keep the start of the first error for the report. */
static size_t sink(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	struct run *run = userdata;
	size_t len = size * nmemb;

	if (run->first_error && !run->first_error_body[0])
		snprintf(run->first_error_body, sizeof(run->first_error_body), "%.*s",
		         (int)(len < 200 ? len : 200), ptr);
	return len;
}

static void small_pod(char *buf, size_t cap, const char *prefix, long i)
{
	snprintf(buf, cap,
	         "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s-%06ld\"},"
	         "\"spec\":{\"schedulerName\":\"apiserver-limit-bench\","
	         "\"tolerations\":[{\"operator\":\"Exists\"}],"
	         "\"containers\":[{\"name\":\"main\",\"image\":\"busybox\","
	         "\"resources\":{\"requests\":{\"cpu\":\"1m\"}}}]}}",
	         prefix, i);
}

/* --pod's template, "{name}" and "{gang}" filled in; false when the
 * result would not fit in cap bytes. */
static bool template_pod(char *buf, size_t cap, const char *t, const char *prefix, long i,
                         long gang)
{
	char name[NAME_MAX_LEN], gname[NAME_MAX_LEN];
	size_t len = 0;

	snprintf(name, sizeof(name), "%s-%06ld", prefix, i);
	snprintf(gname, sizeof(gname), "%s-g%06ld", prefix, gang);
	while (*t) {
		const char *with = strncmp(t, "{name}", 6) == 0   ? name
		                   : strncmp(t, "{gang}", 6) == 0 ? gname
		                                                  : NULL;
		size_t n = with ? strlen(with) : 1;

		if (len + n >= cap)
			return false;
		memcpy(buf + len, with ? with : t, n);
		len += n;
		t += with ? 6 : 1;
	}
	buf[len] = '\0';
	return true;
}

/* --pod's template into buf (cap bytes), checked to fill in within
 * BODY_MAX for every pod; 0 or a negative errno. */
static int read_pod(const char *path, const struct options *o, char *buf, size_t cap)
{
	FILE *f = fopen(path, "r");
	char body[BODY_MAX];
	size_t n;

	if (!f)
		return -errno;
	n = fread(buf, 1, cap, f);
	fclose(f);
	if (n == 0 || n == cap)
		return -EMSGSIZE;
	buf[n] = '\0';
	/* the longest names are those of the last pod */
	return template_pod(body, sizeof(body), buf, o->prefix, o->pods, o->pods) ? 0 : -EMSGSIZE;
}

static void fill_request(struct run *run, struct slot *s, long i)
{
	const struct options *o = run->opt;

	s->index = i;
	if (run->phase == PHASE_CREATE) {
		snprintf(s->url, sizeof(s->url), "%s/api/v1/namespaces/%s/pods", o->server, o->ns);
		if (run->pod) /* checked to fit by read_pod() */
			template_pod(s->body, sizeof(s->body), run->pod, o->prefix, i,
			             o->members ? i / o->members : i);
		else
			small_pod(s->body, sizeof(s->body), o->prefix, i);
	} else {
		long node = (o->members ? i / o->members : i) % run->nodes->n;

		snprintf(s->url, sizeof(s->url), "%s/api/v1/namespaces/%s/pods/%s-%06ld/binding",
		         o->server, o->ns, o->prefix, i);
		snprintf(s->body, sizeof(s->body),
		         "{\"apiVersion\":\"v1\",\"kind\":\"Binding\",\"metadata\":{\"name\":\"%s-%"
		         "06ld\"},"
		         "\"target\":{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"name\":\"%s\"}}",
		         o->prefix, i, run->nodes->name[node]);
	}
	curl_easy_setopt(s->easy, CURLOPT_URL, s->url);
	curl_easy_setopt(s->easy, CURLOPT_POSTFIELDS, s->body);
}

static CURL *new_easy(struct run *run)
{
	const struct options *o = run->opt;
	CURL *e = curl_easy_init();

	if (!e)
		return NULL;
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, run->headers);
	curl_easy_setopt(e, CURLOPT_CAINFO, o->cacert);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, sink);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, run);
	curl_easy_setopt(e, CURLOPT_TIMEOUT, 60L);
	curl_easy_setopt(e, CURLOPT_HTTP_VERSION,
	                 o->http1 ? CURL_HTTP_VERSION_1_1 : CURL_HTTP_VERSION_2TLS);
	curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L);
	return e;
}

static void finish(struct run *run, CURLMsg *msg)
{
	long code = 0;

	curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &code);
	run->done++;
	if (msg->data.result != CURLE_OK || code != 201) {
		run->failed++;
		if (!run->first_error)
			run->first_error =
			    msg->data.result != CURLE_OK ? -(long)msg->data.result : code;
	}
}

/* Keeps up to `concurrency` requests in flight until all `pods` are done. */
static int run_phase(struct run *run, struct slot *slots)
{
	const struct options *o = run->opt;
	CURLM *multi = curl_multi_init();
	int running = 0, queued;
	long i;
	CURLMsg *msg;

	if (!multi)
		return -ENOMEM;
	curl_multi_setopt(multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
	curl_multi_setopt(multi, CURLMOPT_MAX_CONCURRENT_STREAMS, o->streams);
	/* As kubeapi/http_sock.c does: uncapped, the first burst opens a
	 * connection for nearly every request past the first connection's. */
	if (o->streams < o->concurrency)
		curl_multi_setopt(multi, CURLMOPT_MAX_HOST_CONNECTIONS,
		                  (o->concurrency + o->streams - 1) / o->streams);
	run->next = run->done = run->failed = 0;
	for (i = 0; i < o->concurrency && run->next < o->pods; i++) {
		fill_request(run, &slots[i], run->next++);
		curl_multi_add_handle(multi, slots[i].easy);
	}
	while (run->done < o->pods) {
		curl_multi_perform(multi, &running);
		while ((msg = curl_multi_info_read(multi, &queued))) {
			struct slot *s = NULL;

			if (msg->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&s);
			finish(run, msg);
			curl_multi_remove_handle(multi, s->easy);
			if (run->next < o->pods) {
				fill_request(run, s, run->next++);
				curl_multi_add_handle(multi, s->easy);
			}
		}
		if (run->done < o->pods)
			curl_multi_poll(multi, NULL, 0, 100, NULL);
	}
	curl_multi_cleanup(multi);
	return 0;
}

static void report(const struct run *run, const char *what, double secs)
{
	const struct options *o = run->opt;

	printf("%s: %ld requests, %ld failed, %.3f s, %.1f/s (%s, concurrency %ld, streams %ld)\n",
	       what, o->pods, run->failed, secs, (o->pods - run->failed) / secs,
	       o->http1 ? "http/1.1" : "http/2", o->concurrency, o->streams);
	if (run->first_error)
		printf("  first error: %ld %s\n", run->first_error, run->first_error_body);
	fflush(stdout);
}

static int parse_options(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
	    {"server", required_argument, NULL, 's'},
	    {"token", required_argument, NULL, 't'},
	    {"cacert", required_argument, NULL, 'c'},
	    {"namespace", required_argument, NULL, 'n'},
	    {"nodes", required_argument, NULL, 'N'},
	    {"pods", required_argument, NULL, 'p'},
	    {"concurrency", required_argument, NULL, 'C'},
	    {"streams", required_argument, NULL, 'S'},
	    {"http1", no_argument, NULL, '1'},
	    {"prefix", required_argument, NULL, 'P'},
	    {"only", required_argument, NULL, 'O'},
	    {"members", required_argument, NULL, 'M'},
	    {"pod", required_argument, NULL, 'F'},
	    {NULL, 0, NULL, 0},
	};
	int c;

	*o = (struct options){
	    .pods = 2000, .concurrency = 64, .prefix = "b", .create = 1, .bind = 1};
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			o->server = optarg;
			break;
		case 't':
			o->token = optarg;
			break;
		case 'c':
			o->cacert = optarg;
			break;
		case 'n':
			o->ns = optarg;
			break;
		case 'N':
			o->nodes_file = optarg;
			break;
		case 'p':
			o->pods = strtol(optarg, NULL, 10);
			break;
		case 'C':
			o->concurrency = strtol(optarg, NULL, 10);
			break;
		case 'S':
			o->streams = strtol(optarg, NULL, 10);
			break;
		case '1':
			o->http1 = 1;
			break;
		case 'P':
			o->prefix = optarg;
			break;
		case 'M':
			o->members = strtol(optarg, NULL, 10);
			break;
		case 'F':
			o->pod_file = optarg;
			break;
		case 'O':
			o->create = strcmp(optarg, "create") == 0;
			o->bind = strcmp(optarg, "bind") == 0;
			if (!o->create && !o->bind)
				return -EINVAL;
			break;
		default:
			return -EINVAL;
		}
	}
	if (!o->server || !o->token || !o->cacert || !o->ns || !o->nodes_file || o->pods < 1 ||
	    o->pods > 1000000 || o->concurrency < 1 || o->concurrency > 4096 || o->streams < 0 ||
	    o->streams > 4096 || o->members < 0 || o->members > 1000000)
		return -EINVAL;
	if (o->streams == 0)
		o->streams = o->concurrency;
	return 0;
}

int main(int argc, char **argv)
{
	struct options o;
	struct nodes nodes = {0};
	struct run run = {0};
	struct slot *slots = NULL;
	char auth[512], pod[POD_MAX];
	double t0;
	long i;
	int rc = 1;

	if (parse_options(argc, argv, &o) < 0) {
		fprintf(stderr,
		        "usage: apiserver_limit --server URL --token TOKEN --cacert FILE "
		        "--namespace NS --nodes FILE [--pods N] [--concurrency C] [--streams S] "
		        "[--http1] [--prefix P] [--only create|bind] [--members M] [--pod FILE]\n");
		return 2;
	}
	if (read_nodes(o.nodes_file, &nodes) < 0) {
		fprintf(stderr, "apiserver_limit: no node names in %s\n", o.nodes_file);
		return 2;
	}
	if (o.pod_file && read_pod(o.pod_file, &o, pod, sizeof(pod)) < 0) {
		fprintf(stderr, "apiserver_limit: %s: not a pod template of under %d bytes\n",
		        o.pod_file, POD_MAX);
		return 2;
	}
	run.pod = o.pod_file ? pod : NULL;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s", o.token);
	run.opt = &o;
	run.nodes = &nodes;
	run.headers = curl_slist_append(NULL, auth);
	run.headers = curl_slist_append(run.headers, "Content-Type: application/json");
	run.headers = curl_slist_append(run.headers, "Accept: application/json");
	slots = calloc(o.concurrency, sizeof(*slots));
	if (!slots)
		goto out;
	for (i = 0; i < o.concurrency; i++) {
		slots[i].easy = new_easy(&run);
		if (!slots[i].easy)
			goto out;
		curl_easy_setopt(slots[i].easy, CURLOPT_PRIVATE, &slots[i]);
	}
	if (o.create) {
		run.phase = PHASE_CREATE;
		t0 = now();
		if (run_phase(&run, slots) < 0)
			goto out;
		report(&run, "create", now() - t0);
	}
	if (o.bind) {
		run.phase = PHASE_BIND;
		run.first_error = 0;
		run.first_error_body[0] = '\0';
		t0 = now();
		if (run_phase(&run, slots) < 0)
			goto out;
		report(&run, "bind", now() - t0);
	}
	rc = run.failed ? 1 : 0;
out:
	for (i = 0; slots && i < o.concurrency; i++)
		curl_easy_cleanup(slots[i].easy);
	free(slots);
	free(nodes.name);
	curl_slist_free_all(run.headers);
	curl_global_cleanup();
	return rc;
}
