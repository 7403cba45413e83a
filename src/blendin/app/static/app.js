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
