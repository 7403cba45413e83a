// blendin app: the few behaviours htmx does not cover. No network access beyond this app.
document.addEventListener("change", function (event) {
  var target = event.target;
  if (target.classList.contains("kind")) {
    // show the parameters of the chosen hierarchy builder only
    var card = target.closest(".hier");
    card.querySelectorAll(".params").forEach(function (el) {
      el.hidden = el.dataset.kind !== target.value;
    });
  }
  if (target.type === "file" && target.closest("form.upload")) {
    checkSize(target.closest("form.upload"));
  }
  if (target.type === "file" && target.closest("form.arx") && target.files.length) {
    // an ARX hierarchy file is read and checked as soon as it is chosen
    target.closest("form.arx").requestSubmit();
  }
});

function checkSize(form) {
  // refuse a file above the limit before sending it, with the same words as the server
  var input = form.querySelector("input[type=file]");
  var box = form.querySelector(".upload-error");
  var limit = Number(form.dataset.limit);
  var file = input.files && input.files[0];
  if (file && limit && file.size > limit) {
    var gb = (file.size / 1073741824).toFixed(1);
    box.textContent = "error: the file " + file.name + " is " + gb + " GB, above the limit of " +
      form.dataset.limitText + ". Fix: give the file's path on the command line " +
      "(blendin app FILE), or raise the limit with blendin app --max-upload 4GB";
    box.hidden = false;
    return false;
  }
  box.hidden = true;
  return true;
}

document.addEventListener("submit", function (event) {
  var form = event.target;
  if (form.classList.contains("upload") && !checkSize(form)) {
    event.preventDefault();
  }
});

// htmx requests carry the session's token as a header too (the forms send it as a field)
document.addEventListener("htmx:configRequest", function (event) {
  var field = document.querySelector("input[name=token]");
  if (field) {
    event.detail.headers["X-Blendin-Token"] = field.value;
  }
});

// a running job: refresh its panel every 400 ms; when it is done, show the page afresh
function poll() {
  var box = document.getElementById("job");
  if (!box || !box.dataset.poll) {
    return;
  }
  fetch(box.dataset.poll, {cache: "no-store"}).then(function (response) {
    return response.text();
  }).then(function (html) {
    var holder = document.createElement("div");
    holder.innerHTML = html;
    var fresh = holder.firstElementChild;
    if (fresh.dataset.done) {
      showPage(fresh.dataset.done);
      return;
    }
    // update the words and the bar in place, so the Cancel button stays put
    box.querySelector(".status").innerHTML = fresh.querySelector(".status").innerHTML;
    var bar = box.querySelector("progress");
    var now = fresh.querySelector("progress");
    if (now.hasAttribute("value")) {
      bar.max = 1;
      bar.value = Number(now.getAttribute("value"));
    }
    setTimeout(poll, 400);
  }).catch(function () {
    setTimeout(poll, 1000);
  });
}
document.addEventListener("DOMContentLoaded", function () {
  setTimeout(poll, 300);
});

// the finished job's page, swapped in place (no navigation: nothing to race with)
function showPage(url) {
  fetch(url, {cache: "no-store"}).then(function (response) {
    return response.text();
  }).then(function (html) {
    var doc = new DOMParser().parseFromString(html, "text/html");
    var main = document.getElementById("main");
    var fresh = doc.getElementById("main");
    main.replaceWith(fresh);
    if (window.htmx) {
      window.htmx.process(fresh);
    }
    history.replaceState(null, "", url);
    var anchor = document.getElementById(url.split("#")[1] || "run");
    if (anchor) {
      anchor.scrollIntoView();
    }
  });
}
