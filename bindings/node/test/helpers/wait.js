'use strict';
// within(p, what, ms): p, or a rejection naming `what` after ms (a bound so
// that a broken test ends, never a timing check).

function within(p, what, ms = 60_000) {
  let timer;
  const t = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

module.exports = { within };
