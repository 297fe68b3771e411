/*
 * corral: a caching HTTP reverse proxy that stops cache stampedes.
 */

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "common/log.h"
#include "conf/conf.h"
#include "proxy/proxy.h"

#define DEFAULT_CONF	"/etc/corral/corral.conf"

static void
usage(FILE *out)
{
	fprintf(out,
	    "usage: corral [-t] [-c FILE]\n"
	    "       corral -V | -h\n"
	    "\n"
	    "  -c FILE  configuration file (default " DEFAULT_CONF ")\n"
	    "  -t       check the configuration and exit\n"
	    "  -V       print the version and exit\n"
	    "  -h       print this help, and every configuration key\n");
}

static void
on_stop_signal(evutil_socket_t sig, short what, void *arg)
{
	struct event_base *base = arg;

	log_info("%s: shutting down", strsignal(sig));
	event_base_loopexit(base, NULL);
}

int
main(int argc, char **argv)
{
	static struct conf conf;	/* large: keep it off the stack */
	static struct proxy px;
	const char *file = DEFAULT_CONF;
	struct event_base *base;
	struct event *sigterm, *sigint;
	char err[512];
	int ch, check = 0, nerr;

	while ((ch = getopt(argc, argv, "c:thV")) != -1) {
		switch (ch) {
		case 'c':
			file = optarg;
			break;
		case 't':
			check = 1;
			break;
		case 'V':
			printf("corral %s\n", CORRAL_VERSION);
			return 0;
		case 'h':
			usage(stdout);
			printf("\nconfiguration keys:\n");
			conf_dump_keys(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}

	if ((nerr = conf_load(&conf, file, stderr)) != 0) {
		fprintf(stderr, "%s: %d error%s\n", file, nerr,
		    nerr == 1 ? "" : "s");
		return 1;
	}
	if (check) {
		printf("configuration OK\n");
		return 0;
	}
	log_set_level(conf.log_level);
	signal(SIGPIPE, SIG_IGN);

	if ((base = event_base_new()) == NULL) {
		log_error("cannot create the event loop");
		return 1;
	}
	if (proxy_start(&px, base, &conf, err, sizeof(err)) == -1) {
		log_error("%s", err);
		event_base_free(base);
		return 1;
	}
	sigterm = evsignal_new(base, SIGTERM, on_stop_signal, base);
	sigint = evsignal_new(base, SIGINT, on_stop_signal, base);
	evsignal_add(sigterm, NULL);
	evsignal_add(sigint, NULL);

	event_base_dispatch(base);

	proxy_stop(&px);
	event_free(sigterm);
	event_free(sigint);
	event_base_free(base);
	log_info("stopped");
	return 0;
}
