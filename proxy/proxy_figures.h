/* SPDX-License-Identifier: MIT */
#ifndef PROXY_PROXY_FIGURES_H
#define PROXY_PROXY_FIGURES_H

/* This worker's gauges copied to its slot in the memory the workers
 * share, and the figures of every worker, summed (its own read live). */

struct proxy;
struct proxy_figures;

void	proxy_publish(struct proxy *px);
void	proxy_figures(struct proxy *px, struct proxy_figures *f);

#endif
