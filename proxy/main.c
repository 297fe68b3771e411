/* SPDX-License-Identifier: MIT */
/*
 * corral: a caching HTTP reverse proxy that stops cache stampedes.
 */

#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "common/log.h"
#include "common/pidfile.h"
#include "common/prio.h"
#include "common/util.h"
#include "conf/conf.h"
#include "proxy/proxy.h"
#include "proxy/proxy_feed.h"
#include "proxy/proxy_http.h"
#include "proxy/proxy_log.h"
#include "proxy/proxy_peer.h"
#include "proxy/proxy_service.h"
#include "proxy/proxy_tls.h"

#define DEFAULT_CONF	"/etc/corral/corral.conf"
#define SHOW_TIMEOUT_S	5		/* corral -s: the whole exchange */
#define SHOW_PATH	"/stats.txt"
#define SHOW_ANSWER_MAX	(4 * 1024 * 1024)	/* corral -s reads this much */
#define SHOW_TOKEN_ENV	"CORRAL_ADMIN_TOKEN"	/* corral -s: its Bearer token */
#define SHOW_NO_TOKEN	401		/* what an admin listener with tokens
					 * answers without one */
#define RESPAWN_MS	1000		/* a worker that died is restarted after
					 * this, doubled at each start that fails */
#define START_TRIES	3		/* a worker that dies this many times in
					 * a row before it is ready ends the
					 * instance */
#define KILL_SLACK_MS	2000		/* a stop kills the workers still there
					 * this long after shutdown_timeout */

static void
usage(FILE *out)
{
	fprintf(out,
	    "usage: corral [-t] [-c FILE]\n"
	    "       corral -s ADMIN_ADDR [-c FILE]\n"
	    "       corral -V | -h\n"
	    "\n"
	    "  -c FILE  configuration file (default " DEFAULT_CONF ")\n"
	    "  -t       check the configuration and exit\n"
	    "  -s ADDR  print the stats of the corral whose admin listener is\n"
	    "           at ADDR (host:port) as a table, and exit; with\n"
	    "           admin_token_file, the token is $" SHOW_TOKEN_ENV ",\n"
	    "           or else the first of -c FILE's admin_token_file\n"
	    "  -V       print the version and exit\n"
	    "  -h       print this help, and every configuration key\n");
}

/* corral -s: what came back for SHOW_PATH: its status, -1 for none; the
 * body printed when it is a 200. */
static int
show_answer(const char *addr, const char *resp, size_t len, int token)
{
	const char *body = memmem(resp, len, "\r\n\r\n", 4);
	int code = 0;

	if (len < 12 || sscanf(resp, "HTTP/1.%*d %d", &code) != 1 ||
	    body == NULL) {
		fprintf(stderr, "corral: no answer from %s\n", addr);
		return -1;
	}
	body += 4;
	if (code == SHOW_NO_TOKEN && !token)
		fprintf(stderr, "corral: %s wants an admin token: set "
		    SHOW_TOKEN_ENV ", or name the configuration whose "
		    "admin_token_file has one with -c\n", addr);
	else if (code != 200)
		fprintf(stderr, "corral: %s answered %d for " SHOW_PATH "\n",
		    addr, code);
	else
		fwrite(body, 1, len - (size_t)(body - resp), stdout);
	return code;
}

/*
 * The token corral -s sends: $CORRAL_ADMIN_TOKEN, else the first token of
 * path's admin_token_file when path was named with -c (NULL: none); out
 * holds "Bearer TOKEN". -1 when path cannot be read.
 */
static int
show_token(const char *path, char *out, size_t outlen)
{
	const char *env = getenv(SHOW_TOKEN_ENV);
	struct conf *c;
	int nerr;

	out[0] = '\0';
	if (env != NULL && env[0] != '\0') {
		snprintf(out, outlen, "Bearer %s", env);
		return 0;
	}
	if (path == NULL)
		return 0;
	if ((c = calloc(1, sizeof(*c))) == NULL) {
		fprintf(stderr, "corral: out of memory\n");
		return -1;
	}
	if ((nerr = conf_load(c, path, stderr)) != 0) {
		fprintf(stderr, "%s: %d error%s\n", path, nerr,
		    nerr == 1 ? "" : "s");
		free(c);
		return -1;
	}
	if (c->nadmin_tokens > 0)
		snprintf(out, outlen, "Bearer %s", c->admin_tokens[0].text);
	explicit_bzero(c, sizeof(*c));	/* its tokens */
	free(c);
	return 0;
}

/* A connected socket to host:port, with SHOW_TIMEOUT_S on every read and
 * write; -1 said on stderr. */
static int
show_connect(const char *addr, const char *host, int port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai = NULL;
	struct timeval tv = { SHOW_TIMEOUT_S, 0 };
	char service[8];
	int fd = -1;

	snprintf(service, sizeof(service), "%d", port);
	if (getaddrinfo(host, service, &hints, &ai) != 0 ||
	    (fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1 ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == -1 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) == -1 ||
	    connect(fd, ai->ai_addr, ai->ai_addrlen) == -1) {
		fprintf(stderr, "corral: no answer from %s (%s)\n", addr,
		    strerror(errno));
		if (fd != -1)
			close(fd);
		fd = -1;
	}
	if (ai != NULL)
		freeaddrinfo(ai);
	return fd;
}

/* corral -s: one GET of SHOW_PATH from a running corral's admin listener,
 * read to its close. */
static int
show_stats(const char *addr, const char *conf_path)
{
	char host[CONF_HOST_MAX], auth[CONF_TOKEN_MAX + 16], *resp;
	char ask[CONF_HOST_MAX + CONF_TOKEN_MAX + 128];
	size_t len = 0;
	ssize_t n;
	int port, fd, code, asked, token;

	if (util_parse_hostport(addr, host, sizeof(host), &port) == -1) {
		fprintf(stderr, "corral: -s %s: want host:port\n", addr);
		return 2;
	}
	if (show_token(conf_path, auth, sizeof(auth)) == -1)
		return 1;
	asked = snprintf(ask, sizeof(ask), "GET " SHOW_PATH " HTTP/1.0\r\n"
	    "Host: %s\r\n%s%s%s\r\n", addr, auth[0] != '\0' ?
	    "Authorization: " : "", auth, auth[0] != '\0' ? "\r\n" : "");
	token = auth[0] != '\0';
	explicit_bzero(auth, sizeof(auth));
	if ((fd = show_connect(addr, host, port)) == -1)
		return 1;
	if ((resp = malloc(SHOW_ANSWER_MAX)) == NULL ||
	    write(fd, ask, (size_t)asked) != asked) {
		fprintf(stderr, "corral: cannot ask %s\n", addr);
		explicit_bzero(ask, sizeof(ask));
		free(resp);
		close(fd);
		return 1;
	}
	explicit_bzero(ask, sizeof(ask));
	while (len < SHOW_ANSWER_MAX &&
	    (n = read(fd, resp + len, SHOW_ANSWER_MAX - len)) > 0)
		len += (size_t)n;
	close(fd);
	code = show_answer(addr, resp, len, token);
	free(resp);
	return code == 200 ? 0 : 1;
}

/* SIGUSR1: after logrotate moved the logs, write to new files. */
static void
on_reopen_signal(evutil_socket_t sig, short what, void *arg)
{
	struct proxy *px = arg;
	char err[512];

	if (log_reopen(err, sizeof(err)) == -1)
		log_error("%s", err);
	if (access_log_reopen(px->access_log, err, sizeof(err)) == -1)
		log_error("%s", err);
	log_info("%s: logs reopened", strsignal(sig));
}

static struct conf	*conf;		/* the running configuration */
static const char	*conf_file = DEFAULT_CONF;
static struct service	*service;	/* this process's, for systemd */

/* SIGTERM, SIGINT, SIGQUIT: finish what is in progress, then exit. */
static void
on_stop_signal(evutil_socket_t sig, short what, void *arg)
{
	struct proxy *px = arg;

	log_info("%s: stopping", strsignal(sig));
	service_stopping(service, conf->shutdown_timeout_ms);
	proxy_drain(px);
}

/* SIGHUP: read the configuration file again. */
static void
on_reload_signal(evutil_socket_t sig, short what, void *arg)
{
	struct proxy *px = arg;

	log_info("%s: reloading %s", strsignal(sig), conf_file);
	service_reloading(service);
	(void)proxy_reload(px, &conf, conf_file);
	service_reloaded(service);
}

/*
 * workers > 1: the master binds the listeners, forks the workers (which
 * share its sockets), passes signals on to them (checking a reload's
 * configuration first), restarts a worker that dies, and exits when they
 * all have after a stop. A worker that keeps dying before it is ready is
 * restarted START_TRIES times at most, each wait twice the last; then the
 * instance stops, with status 1. A stop signal ends the master whatever
 * its workers do: at once when none runs, and by SIGKILL to those still
 * running KILL_SLACK_MS past shutdown_timeout. The workers' figures live
 * in memory mapped here, before the fork, so that each can sum them all.
 */
static struct {
	struct event_base	*base;
	struct worker_slot	*slots;
	int			 n;
	int			 stopping;
	int			 status;
	int			 fails[WORKERS_MAX];	/* deaths before ready, in
							 * a row, by slot */
	int			 respawn_ms;	/* the respawn timer's wait */
	struct event		*respawn_ev;
	struct event		*kill_ev;	/* a stop's last resort */
} master;

/* The sockets every worker listens on. */
static struct listen_socks socks = { .npub = 0, .admin = -1 };

static int run_worker(struct worker_slot *slots, int nslots, int slot);
static int run(int nworkers);
static void worker_signals(sigset_t *set);

/* The near cache the workers share, mapped before they are forked. */
static struct l2 *shared_l2;

/* The signals the master passes on and a worker handles. */
static const int relayed[] = { SIGTERM, SIGINT, SIGQUIT, SIGHUP, SIGUSR1 };

/* Those signals as a set: blocked from fork() until a worker can handle
 * them. */
static void
worker_signals(sigset_t *set)
{
	sigemptyset(set);
	for (size_t k = 0; k < ARRAY_LEN(relayed); k++)
		sigaddset(set, relayed[k]);
}

static void
spawn(int i)
{
	sigset_t set, old;
	pid_t pid;

	master.slots[i].ready = 0;	/* until the new worker says so */
	worker_signals(&set);
	sigprocmask(SIG_BLOCK, &set, &old);
	if ((pid = fork()) == -1) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		log_error("cannot start worker %d: %s", i, strerror(errno));
		return;
	}
	if (pid == 0) {
		/* The master's signal handlers are not the worker's; a
		 * signal sent before the worker has its own stays pending. */
		for (size_t k = 0; k < ARRAY_LEN(relayed); k++)
			signal(relayed[k], SIG_DFL);
		signal(SIGCHLD, SIG_DFL);
		exit(run_worker(master.slots, master.n, i));
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	master.slots[i].pid = pid;
	log_info("worker %d started, pid %d", i, (int)pid);
	if (conf->restart_pending != 0) {
		char list[RESTART_TEXT_MAX];

		conf_restart_pending_text(conf, list, sizeof(list));
		log_info("worker %d keeps the running %s until a restart", i,
		    list);
	}
}

static void
tell_workers(int sig)
{
	for (int i = 0; i < master.n; i++)
		if (master.slots[i].pid > 0)
			kill(master.slots[i].pid, sig);
}

static int
workers_left(void)
{
	int left = 0;

	for (int i = 0; i < master.n; i++)
		left += master.slots[i].pid > 0;
	return left;
}

/* Past a stop's deadline: the workers still running are killed. */
static void
on_kill_deadline(evutil_socket_t fd, short what, void *arg)
{
	int left = workers_left();

	if (left == 0)
		return;
	log_error("stop: %d worker%s still running %d ms past "
	    "shutdown_timeout; killing", left, left == 1 ? "" : "s",
	    KILL_SLACK_MS);
	master.status = 1;
	tell_workers(SIGKILL);
}

/* The instance stops (a signal, or workers that cannot start): the
 * workers are told with sig, nothing is restarted, and the master's loop
 * ends once no worker is left. */
static void
master_stop(int sig)
{
	struct timeval tv;

	if (!master.stopping) {
		service_stopping(service, conf->shutdown_timeout_ms);
		tv = util_timeval(conf->shutdown_timeout_ms + KILL_SLACK_MS);
		evtimer_add(master.kill_ev, &tv);
	}
	master.stopping = 1;
	evtimer_del(master.respawn_ev);
	/* No worker accepts again: once theirs close, new connections are
	 * refused. */
	http_unbind(&socks);
	tell_workers(sig);
	if (workers_left() == 0)
		event_base_loopexit(master.base, NULL);
}

static void
on_master_signal(evutil_socket_t sig, short what, void *arg)
{
	struct conf *new;
	char err[512];

	switch (sig) {
	case SIGTERM:
	case SIGINT:
	case SIGQUIT:
		log_info("%s: stopping %d workers", strsignal(sig),
		    workers_left());
		master_stop(sig);
		break;
	case SIGHUP:
		log_info("%s: reloading %s", strsignal(sig), conf_file);
		service_reloading(service);
		/* What a worker started from now on runs, too. */
		if ((new = proxy_conf_load(conf_file, conf, 0)) != NULL) {
			free(conf);
			conf = new;
			tell_workers(SIGHUP);
		}		/* else the workers keep theirs */
		service_reloaded(service);
		break;
	case SIGUSR1:
		if (log_reopen(err, sizeof(err)) == -1)
			log_error("%s", err);
		tell_workers(SIGUSR1);
		break;
	}
}

/* Worker i died (not in a stop): restarted after a wait that doubles with
 * each death before it was ready, or the end after START_TRIES of them. */
static void
worker_died(int i, int was_ready)
{
	struct timeval tv;
	int ms;

	master.fails[i] = was_ready ? 0 : master.fails[i] + 1;
	if (master.fails[i] >= START_TRIES) {
		log_error("worker %d could not start %d times in a row; "
		    "stopping (see the errors above)", i, master.fails[i]);
		master_stop(SIGTERM);
		return;
	}
	ms = RESPAWN_MS << (master.fails[i] > 0 ? master.fails[i] - 1 : 0);
	if (!evtimer_pending(master.respawn_ev, NULL) || ms < master.respawn_ms) {
		master.respawn_ms = ms;
		tv = util_timeval(ms);
		evtimer_add(master.respawn_ev, &tv);
	}
}

static void
on_child(evutil_socket_t sig, short what, void *arg)
{
	int status, i, was_ready;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		for (i = 0; i < master.n && master.slots[i].pid != pid; i++)
			;
		if (i == master.n)
			continue;
		was_ready = master.slots[i].ready;
		master.slots[i].pid = 0;
		master.slots[i].ready = 0;
		peer_forget(&master.slots[i].peer);	/* it fetches nothing now */
		budget_forget(&master.slots[i].budget);	/* nor holds slots */
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
		    master.stopping) {
			/* Started again after failed starts, never ready: the
			 * instance stops still failing. */
			if (master.fails[i] > 0 && !was_ready)
				master.status = 1;
			continue;
		}
		master.status = 1;
		if (WIFSIGNALED(status))
			log_error("worker %d (pid %d) died of signal %d", i,
			    (int)pid, WTERMSIG(status));
		else
			log_error("worker %d (pid %d) exited with %d%s", i,
			    (int)pid, WEXITSTATUS(status), was_ready ? "" :
			    " before it was ready");
		if (!master.stopping)
			worker_died(i, was_ready);
	}
	if (master.stopping && workers_left() == 0)
		event_base_loopexit(master.base, NULL);
}

static void
on_respawn(evutil_socket_t fd, short what, void *arg)
{
	for (int i = 0; i < master.n && !master.stopping; i++)
		if (master.slots[i].pid == 0)
			spawn(i);
	master.status = 0;
}

static int
run_master(int n)
{
	struct event *ev[ARRAY_LEN(relayed)], *sigchld;
	size_t size = sizeof(struct worker_slot) * (size_t)n;

	master.n = n;
	master.slots = mmap(NULL, size, PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (master.slots == MAP_FAILED) {
		log_error("cannot map the workers' figures: %s", strerror(errno));
		return 1;
	}
	memset(master.slots, 0, size);
	/* Workers are forked before the master's loop exists. */
	for (int i = 0; i < n; i++)
		spawn(i);
	if ((master.base = event_base_new()) == NULL) {
		log_error("cannot create the event loop");
		tell_workers(SIGKILL);
		return 1;
	}
	for (size_t k = 0; k < ARRAY_LEN(relayed); k++) {
		ev[k] = evsignal_new(master.base, relayed[k], on_master_signal,
		    NULL);
		evsignal_add(ev[k], NULL);
	}
	sigchld = evsignal_new(master.base, SIGCHLD, on_child, NULL);
	evsignal_add(sigchld, NULL);
	master.respawn_ev = evtimer_new(master.base, on_respawn, NULL);
	master.kill_ev = evtimer_new(master.base, on_kill_deadline, NULL);
	if ((service = service_new(master.base, NULL, master.slots, n, 0, 1,
	    conf)) == NULL)
		log_error("out of memory: nothing is reported to the service "
		    "manager");
	log_info("corral %s master, %d workers", CORRAL_VERSION, n);
	/* A worker may have died before SIGCHLD had a handler. */
	on_child(SIGCHLD, 0, NULL);

	event_base_dispatch(master.base);

	for (size_t k = 0; k < ARRAY_LEN(relayed); k++)
		event_free(ev[k]);
	event_free(sigchld);
	event_free(master.respawn_ev);
	event_free(master.kill_ev);
	http_unbind(&socks);
	service_free(&service);
	event_base_free(master.base);
	munmap(master.slots, size);
	l2_free(&shared_l2);
	free(conf);
	log_info("stopped");
	log_close();
	return master.status;
}

/* What the command line asks for. */
enum action {
	ACT_RUN,
	ACT_CHECK,		/* -t */
	ACT_SHOW,		/* -s */
	ACT_DONE,		/* -V, -h: said */
	ACT_USAGE		/* a bad command line */
};

static enum action
read_args(int argc, char **argv, const char **show, const char **named)
{
	int ch, check = 0;

	while ((ch = getopt(argc, argv, "c:s:thV")) != -1) {
		switch (ch) {
		case 'c':
			conf_file = *named = optarg;
			break;
		case 's':
			*show = optarg;
			break;
		case 't':
			check = 1;
			break;
		case 'V':
			printf("corral %s\n", CORRAL_VERSION);
			return ACT_DONE;
		case 'h':
			usage(stdout);
			printf("\nconfiguration keys:\n");
			conf_dump_keys(stdout, CONF_DUMP_TEXT);
			return ACT_DONE;
		default:
			return ACT_USAGE;
		}
	}
	if (optind != argc || (*show != NULL && check))
		return ACT_USAGE;
	return *show != NULL ? ACT_SHOW : check ? ACT_CHECK : ACT_RUN;
}

/* Reads conf_file into conf; -1 with every error said on stderr. */
static int
load_conf(void)
{
	int nerr;

	if ((conf = calloc(1, sizeof(*conf))) == NULL) {
		fprintf(stderr, "corral: out of memory\n");
		return -1;
	}
	if ((nerr = conf_load(conf, conf_file, stderr)) == 0)
		nerr = feeds_check(conf, stderr);
	if (nerr != 0) {
		fprintf(stderr, "%s: %d error%s\n", conf_file, nerr,
		    nerr == 1 ? "" : "s");
		free(conf);
		return -1;
	}
	return 0;
}

/* Does a listener speak TLS? */
static int
tls_wanted(const struct conf *c)
{
	int tls = c->admin_listener[0].tls;

	for (int i = 0; i < c->nlisteners; i++)
		tls |= c->listeners[i].tls;
	return tls;
}

/* corral -t: the warnings (what each change feed's server says among
 * them: a database not ready is no reason to refuse the file, whose feed
 * waits for it), the certificate's checks, then the verdict. */
static int
check_only(void)
{
	char err[512];

	for (int i = 0; conf_warning(conf, i, err, sizeof(err)) == 0; i++)
		fprintf(stderr, "%s\n", err);
	feeds_check_servers(conf, stderr);
	if (tls_wanted(conf) && tls_check(conf->tls_certificate, conf->tls_key,
	    err, sizeof(err)) == -1) {
		fprintf(stderr, "%s: %s\n", conf_file, err);
		free(conf);
		return 1;
	}
	if (tls_wanted(conf) && err[0] != '\0')
		fprintf(stderr, "%s: warning: %s\n", conf_file, err);
	printf("configuration OK\n");
	free(conf);
	return 0;
}

/* workers, 0 for one per core, within 1..WORKERS_MAX. */
static int
workers_wanted(void)
{
	int n = conf->workers;

	if (n == 0)
		n = (int)sysconf(_SC_NPROCESSORS_ONLN);
	return MAX(1, MIN(n, WORKERS_MAX));
}

/* The log, the shared near cache and the listeners, before any worker:
 * a port in use ends the start here. */
static int
start(void)
{
	char err[512];

	log_set_level(conf->log_level);
	log_set_format(conf->log_format);
	if (log_open(conf->error_log, err, sizeof(err)) == -1) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	for (int i = 0; conf_warning(conf, i, err, sizeof(err)) == 0; i++)
		log_warn("%s", err);
	signal(SIGPIPE, SIG_IGN);
	if ((shared_l2 = l2_new(conf->l2_max_bytes, err, sizeof(err))) == NULL) {
		log_error("%s", err);
		return 1;
	}
	/* Once, before any worker: the session-ticket keys they share. */
	if (tls_wanted(conf) && tls_init(err, sizeof(err)) == -1) {
		log_error("%s", err);
		return 1;
	}
	if (http_bind(conf, &socks, err, sizeof(err)) == -1) {
		log_error("%s", err);
		l2_free(&shared_l2);
		free(conf);
		log_close();
		return 1;
	}
	return run(workers_wanted());
}

int
main(int argc, char **argv)
{
	const char *show = NULL, *named = NULL;
	enum action act = read_args(argc, argv, &show, &named);

	switch (act) {
	case ACT_DONE:
		return 0;
	case ACT_USAGE:
		usage(stderr);
		return 2;
	case ACT_SHOW:
		return show_stats(show, named);
	case ACT_CHECK:
	case ACT_RUN:
		break;
	}
	if (load_conf() == -1)
		return 1;
	return act == ACT_CHECK ? check_only() : start();
}

/* The workers (or the only one), with the PID file while they run. */
static int
run(int nworkers)
{
	static struct worker_slot only;
	char err[512], pid_file[CONF_PATH_MAX];
	int rc;

	/* Degrade, never fail: without its PID file corral still serves. */
	if (conf->pid_file[0] != '\0' && pidfile_write(conf->pid_file, err,
	    sizeof(err)) == -1)
		log_warn("%s", err);
	snprintf(pid_file, sizeof(pid_file), "%s", conf->pid_file);
	rc = nworkers == 1 ? run_worker(&only, 1, 0) : run_master(nworkers);
	if (pid_file[0] != '\0')	/* conf is gone with the run */
		pidfile_remove(pid_file);
	return rc;
}

/*
 * A worker's loop, with the priorities of common/prio.h. With epoll's
 * changelist, a descriptor's interest switched off and on again within
 * one loop pass (a connection stops reading while it answers) costs no
 * epoll_ctl. Corral never dup()s a descriptor, which is the case the
 * changelist cannot handle.
 */
static struct event_base *
worker_base(void)
{
	struct event_config *cfg;
	struct event_base *base;

	if ((cfg = event_config_new()) == NULL)
		return NULL;
	event_config_set_flag(cfg, EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST);
	if (event_config_set_max_dispatch_interval(cfg, NULL, PRIO_CLIENT_RUN,
	    PRIO_CLIENT) == -1) {
		event_config_free(cfg);
		return NULL;
	}
	base = event_base_new_with_config(cfg);
	event_config_free(cfg);
	if (base != NULL && event_base_priority_init(base, PRIO_LEVELS) == -1) {
		event_base_free(base);
		return NULL;
	}
	return base;
}

/* One worker: the whole proxy on its own event loop. */
static int
run_worker(struct worker_slot *slots, int nslots, int slot)
{
	static struct proxy px;
	struct event_base *base;
	struct event *sigterm, *sigint, *sigquit, *sigusr1, *sighup;
	char err[512];

	if ((base = worker_base()) == NULL) {
		log_error("cannot create the event loop");
		return 1;
	}
	if (proxy_start(&px, base, conf, &socks, slots, nslots, slot, shared_l2,
	    err, sizeof(err)) == -1) {
		log_error("%s", err);
		event_base_free(base);
		return 1;
	}
	/* Only the worker systemd started (the only one) reports to it. */
	if ((service = service_new(base, &px, slots, nslots, slot, nslots == 1,
	    conf)) == NULL) {
		log_error("out of memory");
		proxy_stop(&px);
		event_base_free(base);
		return 1;
	}
	sigterm = evsignal_new(base, SIGTERM, on_stop_signal, &px);
	sigint = evsignal_new(base, SIGINT, on_stop_signal, &px);
	sigquit = evsignal_new(base, SIGQUIT, on_stop_signal, &px);
	sigusr1 = evsignal_new(base, SIGUSR1, on_reopen_signal, &px);
	sighup = evsignal_new(base, SIGHUP, on_reload_signal, &px);
	evsignal_add(sigterm, NULL);
	evsignal_add(sigint, NULL);
	evsignal_add(sigquit, NULL);
	evsignal_add(sigusr1, NULL);
	evsignal_add(sighup, NULL);
	{
		sigset_t set;	/* blocked by the master across fork() */

		worker_signals(&set);
		sigprocmask(SIG_UNBLOCK, &set, NULL);
	}

	event_base_dispatch(base);

	service_free(&service);
	proxy_stop(&px);
	event_free(sigterm);
	event_free(sigint);
	event_free(sigquit);
	event_free(sigusr1);
	event_free(sighup);
	event_base_free(base);
	l2_free(&shared_l2);
	free(conf);
	if (nslots == 1)
		log_info("stopped");
	log_close();
	return 0;
}
