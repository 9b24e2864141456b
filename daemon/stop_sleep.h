/* stop_sleep.h - the emulated slow-downs' sleeps (--device-time,
 * --straggle), which a stop cuts short: a run asked to stop must not wait
 * out a device time of minutes before it can vote, checkpoint and end. */
#ifndef QGMD_STOP_SLEEP_H
#define QGMD_STOP_SLEEP_H

/* Worker thread: sleeps for `seconds` of wall time, or until the process
 * is stopping (qgmd_stop_wake), whichever comes first; once it is
 * stopping, returns at once. */
void qgmd_stop_sleep(double seconds);

/* Any thread: the process is stopping; every sleep now and after ends. */
void qgmd_stop_wake(void);

#endif /* QGMD_STOP_SLEEP_H */
