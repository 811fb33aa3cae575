/* bus_signal.c - SIGBUS left deliverable while a call reads mapped files (bus_signal.h). */
#include "core/process/bus_signal.h"

#include <pthread.h>

void oc_bus_signal_open(oc_bus_signal_scope *scope)
{
    sigset_t bus;
    sigemptyset(&bus);
    sigaddset(&bus, SIGBUS);
    scope->changed = pthread_sigmask(SIG_UNBLOCK, &bus, &scope->saved) == 0 && sigismember(&scope->saved, SIGBUS);
}

void oc_bus_signal_close(const oc_bus_signal_scope *scope)
{
    if (scope->changed) pthread_sigmask(SIG_SETMASK, &scope->saved, NULL);
}
