/*
 * The admin gate's rules that need no connection (proxy/proxy_auth.c):
 * which Host names the admin listener, and which Origin is its own. The
 * file is read whole, its static functions with it; its one exported
 * function is renamed here, so that it does not meet the library's.
 */

#include <stdio.h>
#include <string.h>

#define auth_admit unit_auth_admit
#include "proxy/proxy_auth.c"
#undef auth_admit

#include "tests/unit/unit.h"

static struct conf conf;	/* large: off the stack */

static void
listener(const char *host, int port, const char *hosts)
{
	memset(&conf, 0, sizeof(conf));
	snprintf(conf.admin_host, sizeof(conf.admin_host), "%s", host);
	conf.admin_port = port;
	snprintf(conf.admin_hosts, sizeof(conf.admin_hosts), "%s", hosts);
}

static int
ours(const char *host)
{
	return host_is_ours(&conf, host, strlen(host));
}

/* admin_listen's own name is the listener's, in any case, with or without
 * a port; a name that starts or ends with it, or holds it, is another. */
static void
t_the_admin_listen_name_is_the_listeners_host(void)
{
	listener("vm", 8081, "");
	CHECK(ours("vm:8081"));
	CHECK(ours("VM:8081"));
	CHECK(ours("vm"));
	CHECK(!ours("vmx:8081"));
	CHECK(!ours("v:8081"));
	CHECK(!ours("xvm:8081"));
	CHECK(!ours("vm.example:8081"));
	CHECK(!ours("evil.example:8081"));
	CHECK(!ours("vm:8081x"));
	CHECK(!ours(""));
	listener("admin.internal", 9000, "");
	CHECK(ours("admin.internal:9000"));
	CHECK(ours("ADMIN.Internal"));
	CHECK(!ours("admin.internal.evil:9000"));
	CHECK(!ours("admin:9000"));
	CHECK(!ours("x.admin.internal:9000"));
}

/* Addresses have no name to rebind; localhost and names under
 * .localhost never leave the host (RFC 6761); other names only through
 * admin_hosts. */
static void
t_addresses_localhost_and_admin_hosts_are_the_listeners(void)
{
	listener("127.0.0.1", 8081, "admin.example, *.ops.example:*");
	CHECK(ours("127.0.0.1:8081"));
	CHECK(ours("10.1.2.3"));
	CHECK(ours("[::1]:8081"));
	CHECK(ours("localhost:8081"));
	CHECK(ours("LocalHost"));
	CHECK(ours("a.localhost:8081"));
	CHECK(!ours(".localhost"));
	CHECK(!ours("localhostx:8081"));
	CHECK(!ours("xlocalhost:8081"));
	CHECK(!ours("localhost.evil:8081"));
	CHECK(!ours("127.0.0.1.evil:8081"));
	CHECK(ours("admin.example:8081"));
	CHECK(ours("admin.example"));
	CHECK(!ours("admin.example:9999"));	/* another port: not listed */
	CHECK(!ours("admin.examplex:8081"));
	CHECK(!ours("xadmin.example:8081"));
	CHECK(ours("a.ops.example:1234"));
	CHECK(!ours("ops.example:8081"));
	CHECK(!ours("a.ops.examplex:8081"));
}

/* A change's Origin (or Referer) is the listener's own origin: http://,
 * the Host's name in any case, and its port (80 when none is given). */
static void
t_same_origin_is_scheme_name_and_port(void)
{
	CHECK(same_origin("http://vm:8081", "vm:8081"));
	CHECK(same_origin("HTTP://VM:8081/page?x#y", "vm:8081"));
	CHECK(same_origin("http://vm", "vm:80"));
	CHECK(!same_origin("https://vm:8081", "vm:8081"));
	CHECK(!same_origin("http://vm:8082", "vm:8081"));
	CHECK(!same_origin("http://vm", "vm:8081"));
	CHECK(!same_origin("http://vmx:8081", "vm:8081"));
	CHECK(!same_origin("http://v:8081", "vm:8081"));
	CHECK(!same_origin("http://vm:8081@evil:8081", "vm:8081"));
	CHECK(!same_origin("null", "vm:8081"));
}

int
main(void)
{
	RUN(t_the_admin_listen_name_is_the_listeners_host);
	RUN(t_addresses_localhost_and_admin_hosts_are_the_listeners);
	RUN(t_same_origin_is_scheme_name_and_port);
	return unit_exit();
}
