/* global document, fetch, location -- browser globals: this file runs in the page, not in Node */
// The login form: posts the token as JSON and opens the dashboard once the gateway has set the session
// cookie. Without JavaScript the form posts itself and the gateway redirects.
const form = document.getElementById('login');
const message = document.getElementById('message');

form.addEventListener('submit', async (event) => {
  event.preventDefault();
  message.textContent = '';
  const button = form.querySelector('button');
  button.disabled = true;
  try {
    const response = await fetch('/admin/login', {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ token: form.token.value }),
    });
    if (response.ok) {
      location.assign('/');
      return;
    }
    const problem = await response.json().catch(() => ({}));
    message.textContent =
      response.status === 401
        ? 'That token is not right.'
        : (problem.detail ?? `The gateway answered ${response.status}.`);
  } catch (error) {
    message.textContent = `Cannot reach the gateway: ${error.message}`;
  } finally {
    button.disabled = false;
  }
});
