// Waiting on a session's events, for the tests.

// next resolves with the first event of a session that satisfies ok.
export function next(session, event, ok = () => true) {
  return new Promise((resolve) => {
    const off = session.on(event, (ev) => {
      if (ok(ev)) {
        off();
        resolve(ev);
      }
    });
  });
}
