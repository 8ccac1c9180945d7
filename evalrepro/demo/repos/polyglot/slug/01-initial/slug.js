'use strict';

// A title as a URL slug: lower case, runs of anything but letters and digits as one dash.
function slugify(title) {
  return title
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-');
}

module.exports = { slugify };
