/* bus_signal.c - SIGBUS left deliverable while a call reads mapped files (bus_signal.h). */
#include "core/process/bus_signal.h"

#include <pthread.h>

static sigset_t bus_only(void)
{
    sigset_t bus;
    sigemptyset(&bus);
    sigaddset(&bus, SIGBUS);
    return bus;
}

void oc_bus_signal_open(oc_bus_signal_scope *scope)
{
    const sigset_t bus = bus_only();
    scope->changed = pthread_sigmask(SIG_UNBLOCK, &bus, &scope->saved) == 0 && sigismember(&scope->saved, SIGBUS);
}

void oc_bus_signal_close(const oc_bus_signal_scope *scope)
{
    if (scope->changed) pthread_sigmask(SIG_SETMASK, &scope->saved, NULL);
}

void oc_bus_signal_unblock(void)
{
    const sigset_t bus = bus_only();
    pthread_sigmask(SIG_UNBLOCK, &bus, NULL);
}
